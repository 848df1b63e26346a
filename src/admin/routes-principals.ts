// Admin API: workspace users (workspace_users) and API keys (workspace_api_keys); verifiers never leave the store.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createScramVerifier } from '../auth/scram-verifier.js';
import { createKey, keyStatus, parseExpiry, revokeKey, rotateKey } from '../policy/api-keys.js';
import type { ApiKey, Policy } from '../policy/policy-schema.js';
import { HttpError } from './admin-http.js';
import { deleteEntryRoute, entryOf, mustEntry, nameParams } from './named-entries.js';
import { type AdminContext, callerOf, commitEdit, need, policyNow, versionOf } from './policy-edit.js';

const keyId = z.object({ id: z.string().min(1).max(63) }).strict();
const password = z.string().min(8, 'must be at least 8 characters').max(1024);
const userBody = z
  .object({
    password: password.optional(),
    disabled: z.boolean().optional(),
    workspace_admin: z.boolean().optional(),
  })
  .strict();
const passwordBody = z.object({ password }).strict();
const keyBody = z
  .object({
    roles: z.array(z.string().min(1).max(63)).min(1),
    expires: z.string().default('90d'),
    description: z.string().max(200).optional(),
  })
  .strict();

/** A key as the API shows it: no verifier, its status now. */
function publicKey(k: ApiKey, now: number) {
  const { scram: _s, previous_scram: _p, ...rest } = k;
  return { ...rest, status: keyStatus(k, now) };
}

/** Users as the API shows them: no verifier; disabled, workspace admin, groups. */
function publicUsers(p: Policy) {
  return Object.fromEntries(
    Object.entries(p.users).map(([n, u]) => [
      n,
      {
        disabled: u.disabled,
        workspace_admin: p.workspace_admins.includes(n),
        groups: Object.entries(p.groups)
          .filter(([, g]) => g.members.includes(n))
          .map(([g]) => g),
      },
    ]),
  );
}

/** `p` without user `n` anywhere: users, group members, `u/<n>` tenants, workspace admins. */
function withoutUser(p: Policy, n: string): Policy {
  const { [n]: _gone, ...users } = p.users;
  return {
    ...p,
    users,
    workspace_admins: p.workspace_admins.filter((a) => a !== n),
    groups: Object.fromEntries(
      Object.entries(p.groups).map(([g, v]) => [g, { members: v.members.filter((m) => m !== n) }]),
    ),
    roles: Object.fromEntries(
      Object.entries(p.roles).map(([r, v]) => [
        r,
        { ...v, tenants: v.tenants.filter((t) => t !== `u/${n}`) },
      ]),
    ),
  };
}

/** Registers the user and API key routes. */
export function principalRoutes(app: FastifyInstance, ctx: AdminContext): void {
  const users = need(ctx, 'workspace_users');
  const keys = need(ctx, 'workspace_api_keys');

  app.get(
    '/api/users',
    { preHandler: users, schema: { tags: ['users'], summary: 'every user (no verifiers)' } },
    async (_req, reply) => ({
      ...versionOf(ctx, reply),
      users: publicUsers(policyNow(ctx)),
    }),
  );
  app.put<{ Params: { name: string }; Body: z.infer<typeof userBody> }>(
    '/api/users/:name',
    {
      preHandler: users,
      schema: {
        tags: ['users'],
        summary:
          'invite a user (password required) or change one: disable, enable, workspace admin (If-Match)',
        params: nameParams,
        body: userBody,
      },
    },
    async (req) => {
      const n = req.params.name;
      if (req.body.workspace_admin !== undefined && !callerOf(req).workspaceAdmin)
        throw new HttpError(
          403,
          'beyond-editor',
          'only a workspace admin may make or unmake a workspace admin',
        );
      return commitEdit(ctx, req, {
        action: 'workspace_users',
        summary: `put user ${n}`,
        object: (p) => [entryOf(p.users, n) ?? null, p.workspace_admins.includes(n)],
        change: (p) => {
          const old = entryOf(p.users, n);
          if (!old && req.body.password === undefined)
            throw new HttpError(422, 'invalid', 'a new user needs a password', {
              issues: [{ path: 'body.password', message: 'is required for a new user' }],
            });
          const scram = req.body.password !== undefined ? createScramVerifier(req.body.password) : old?.scram;
          const admins = p.workspace_admins.filter((a) => a !== n);
          const admin = req.body.workspace_admin ?? p.workspace_admins.includes(n);
          return {
            ...p,
            users: { ...p.users, [n]: { scram, disabled: req.body.disabled ?? old?.disabled ?? false } },
            workspace_admins: admin ? [...admins, n] : admins,
          };
        },
      });
    },
  );
  app.post<{ Params: { name: string }; Body: z.infer<typeof passwordBody> }>(
    '/api/users/:name/password',
    {
      preHandler: users,
      schema: { tags: ['users'], summary: "reset a user's password", params: nameParams, body: passwordBody },
    },
    async (req) =>
      commitEdit(ctx, req, {
        action: 'workspace_users',
        ifMatch: false,
        summary: `reset password of ${req.params.name}`,
        object: () => null,
        change: (p) => {
          const old = mustEntry(p.users, req.params.name, 'user');
          return {
            ...p,
            users: {
              ...p.users,
              [req.params.name]: { ...old, scram: createScramVerifier(req.body.password) },
            },
          };
        },
      }),
  );
  deleteEntryRoute(app, ctx, {
    path: '/api/users/:name',
    preHandler: users,
    tag: 'users',
    summary: 'remove a user from the workspace (If-Match)',
    action: 'workspace_users',
    verb: 'remove',
    noun: 'user',
    record: (p) => p.users,
    remove: withoutUser,
  });

  app.get(
    '/api/api-keys',
    { preHandler: keys, schema: { tags: ['api-keys'], summary: 'every API key (no verifiers)' } },
    async (_req, reply) => ({
      ...versionOf(ctx, reply),
      api_keys: policyNow(ctx).api_keys.map((k) => publicKey(k, Date.now())),
    }),
  );
  app.post<{ Body: z.infer<typeof keyBody> }>(
    '/api/api-keys',
    {
      preHandler: keys,
      schema: {
        tags: ['api-keys'],
        summary: 'create a key holding the given roles; its token is in this answer only',
        body: keyBody,
      },
    },
    async (req) => {
      const now = Date.now();
      const expiry = parseExpiry(req.body.expires, now);
      if (!expiry.ok)
        throw new HttpError(422, 'invalid', expiry.message, {
          issues: [{ path: 'body.expires', message: expiry.message }],
        });
      let made: { key: ApiKey; token: string } | undefined;
      const r = await commitEdit(ctx, req, {
        action: 'workspace_api_keys',
        ifMatch: false,
        summary: `create an API key for ${req.body.roles.join(', ')}`,
        object: () => null,
        change: (p) => {
          const c = createKey(p.api_keys, {
            roles: req.body.roles,
            expiresAt: expiry.expiresAt,
            now,
            ...(req.body.description !== undefined ? { description: req.body.description } : {}),
          });
          made = c;
          return { ...p, api_keys: c.keys };
        },
      });
      if (!made) throw new HttpError(500, 'internal', 'no key made');
      const { key, token } = made as { key: ApiKey; token: string };
      return { ...r, key: publicKey(key, now), token };
    },
  );
  for (const op of ['rotate', 'revoke'] as const)
    app.post<{ Params: { id: string } }>(
      `/api/api-keys/:id/${op}`,
      {
        preHandler: keys,
        schema: {
          tags: ['api-keys'],
          summary:
            op === 'rotate'
              ? 'a new token (shown once); the old one stays valid for 24 hours'
              : 'revoke a key',
          params: keyId,
        },
      },
      async (req) => {
        let token: string | undefined;
        const r = await commitEdit(ctx, req, {
          action: 'workspace_api_keys',
          ifMatch: false,
          summary: `${op} API key ${req.params.id}`,
          object: () => null,
          change: (p) => {
            const out =
              op === 'rotate'
                ? rotateKey(p.api_keys, req.params.id, Date.now())
                : revokeKey(p.api_keys, req.params.id);
            if (!out.ok)
              throw new HttpError(/^no API key/.test(out.message) ? 404 : 409, 'refused', out.message);
            if ('token' in out) token = out.token as string;
            return { ...p, api_keys: out.keys };
          },
        });
        return { ...r, id: req.params.id, ...(token !== undefined ? { token } : {}) };
      },
    );
}

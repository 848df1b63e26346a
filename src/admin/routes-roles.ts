// Admin API: roles and their permissions (workspace_roles), groups and members (workspace_groups), attaching a role to a group (both).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type Policy, policyShape, roleSchema } from '../policy/policy-schema.js';
import { HttpError } from './admin-http.js';
import { deleteEntryRoute, entryOf, mustEntry, nameParams } from './named-entries.js';
import { type AdminContext, commitEdit, need, policyNow, versionOf } from './policy-edit.js';

const groupRole = z.object({ name: z.string().min(1).max(63), role: z.string().min(1).max(63) }).strict();
const defaultRoleBody = z.object({ role: policyShape.default_role }).strict();
const groupBody = z.object({ members: z.array(z.string().min(1).max(63)) }).strict();

/** The roles whose tenants list `g/<group>`, in policy order. */
function rolesOfGroup(p: Policy, group: string): string[] {
  return Object.entries(p.roles)
    .filter(([, r]) => r.tenants.includes(`g/${group}`))
    .map(([n]) => n);
}

/** Registers the role and group routes. */
export function roleRoutes(app: FastifyInstance, ctx: AdminContext): void {
  const roles = need(ctx, 'workspace_roles');
  const groups = need(ctx, 'workspace_groups');
  const both = need(ctx, 'workspace_groups', 'workspace_roles');

  app.get(
    '/api/roles',
    {
      preHandler: roles,
      schema: { tags: ['roles'], summary: 'every role with its tenants and permissions' },
    },
    async (_req, reply) => {
      const p = policyNow(ctx);
      return { ...versionOf(ctx, reply), default_role: p.default_role, roles: p.roles };
    },
  );
  app.get<{ Params: { name: string } }>(
    '/api/roles/:name',
    { preHandler: roles, schema: { tags: ['roles'], summary: 'one role', params: nameParams } },
    async (req, reply) => ({
      ...versionOf(ctx, reply),
      name: req.params.name,
      role: mustEntry(policyNow(ctx).roles, req.params.name, 'role'),
    }),
  );
  app.put<{ Params: { name: string }; Body: z.infer<typeof roleSchema> }>(
    '/api/roles/:name',
    {
      preHandler: roles,
      schema: {
        tags: ['roles'],
        summary: 'create or replace a role (If-Match: the version read)',
        params: nameParams,
        body: roleSchema,
      },
    },
    async (req) =>
      commitEdit(ctx, req, {
        action: 'workspace_roles',
        summary: `put role ${req.params.name}`,
        object: (p) => entryOf(p.roles, req.params.name),
        change: (p) => ({ ...p, roles: { ...p.roles, [req.params.name]: req.body } }),
      }),
  );
  deleteEntryRoute(app, ctx, {
    path: '/api/roles/:name',
    preHandler: roles,
    tag: 'roles',
    summary: 'delete a role (If-Match)',
    action: 'workspace_roles',
    verb: 'delete',
    noun: 'role',
    record: (p) => p.roles,
    remove: (p, n) => {
      const { [n]: _gone, ...rest } = p.roles;
      return { ...p, roles: rest };
    },
  });
  app.put<{ Body: z.infer<typeof defaultRoleBody> }>(
    '/api/default-role',
    {
      preHandler: roles,
      schema: { tags: ['roles'], summary: 'set or clear the default role (If-Match)', body: defaultRoleBody },
    },
    async (req) =>
      commitEdit(ctx, req, {
        action: 'workspace_roles',
        summary: `default role ${req.body.role ?? 'none'}`,
        object: (p) => p.default_role,
        change: (p) => ({ ...p, default_role: req.body.role }),
      }),
  );

  app.get(
    '/api/groups',
    { preHandler: groups, schema: { tags: ['groups'], summary: 'every group, its members and roles' } },
    async (_req, reply) => {
      const p = policyNow(ctx);
      return {
        ...versionOf(ctx, reply),
        groups: Object.fromEntries(
          Object.entries(p.groups).map(([g, v]) => [g, { ...v, roles: rolesOfGroup(p, g) }]),
        ),
      };
    },
  );
  app.put<{ Params: { name: string }; Body: z.infer<typeof groupBody> }>(
    '/api/groups/:name',
    {
      preHandler: groups,
      schema: {
        tags: ['groups'],
        summary: 'create a group or set its members (If-Match)',
        params: nameParams,
        body: groupBody,
      },
    },
    async (req) =>
      commitEdit(ctx, req, {
        action: 'workspace_groups',
        summary: `put group ${req.params.name}`,
        object: (p) => entryOf(p.groups, req.params.name),
        change: (p) => ({ ...p, groups: { ...p.groups, [req.params.name]: { members: req.body.members } } }),
      }),
  );
  deleteEntryRoute(app, ctx, {
    path: '/api/groups/:name',
    preHandler: groups,
    tag: 'groups',
    summary: 'delete a group with no role attached (If-Match)',
    action: 'workspace_groups',
    verb: 'delete',
    noun: 'group',
    record: (p) => p.groups,
    remove: (p, n) => {
      const attached = rolesOfGroup(p, n);
      if (attached.length > 0)
        throw new HttpError(
          409,
          'in-use',
          `group "${n}" is attached to ${attached.join(', ')}; detach it first`,
        );
      const { [n]: _gone, ...rest } = p.groups;
      return { ...p, groups: rest };
    },
  });
  for (const attach of [true, false]) {
    const route = {
      preHandler: both,
      schema: {
        tags: ['groups'],
        summary: `${attach ? 'attach a role to' : 'detach a role from'} a group (needs workspace_groups and workspace_roles; If-Match)`,
        params: groupRole,
      },
    };
    const handler = async (
      req: { params: { name: string; role: string } } & Parameters<typeof commitEdit>[1],
    ) =>
      commitEdit(ctx, req, {
        action: 'workspace_roles',
        summary: `${attach ? 'attach' : 'detach'} role ${req.params.role} ${attach ? 'to' : 'from'} group ${req.params.name}`,
        object: (p) => [
          entryOf(p.roles, req.params.role)?.tenants ?? null,
          Object.hasOwn(p.groups, req.params.name),
        ],
        change: (p) => {
          mustEntry(p.groups, req.params.name, 'group');
          const r = mustEntry(p.roles, req.params.role, 'role');
          const t = `g/${req.params.name}`;
          const tenants = attach
            ? [...r.tenants.filter((x) => x !== t), t]
            : r.tenants.filter((x) => x !== t);
          return { ...p, roles: { ...p.roles, [req.params.role]: { ...r, tenants } } };
        },
      });
    if (attach)
      app.put<{ Params: { name: string; role: string } }>(
        '/api/groups/:name/roles/:role',
        route,
        async (req) => handler(req),
      );
    else
      app.delete<{ Params: { name: string; role: string } }>(
        '/api/groups/:name/roles/:role',
        route,
        async (req) => handler(req),
      );
  }
}

// One admin edit of the policy: optimistic concurrency on the object edited, the editor's grant limits, the commit, the audit line.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import type { Config } from '../policy/config-schema.js';
import { editorHolds, grantsBeyondEditor, newlyHeldRules } from '../policy/grant-limits.js';
import { configEpoch, policyOfConfig, withPolicy } from '../policy/policy-document.js';
import type { AppAction, Policy } from '../policy/policy-schema.js';
import type { PolicySource } from '../policy/policy-source.js';
import { PolicyConflictError } from '../policy/policy-store.js';
import type { AdminCaller } from './admin-auth.js';
import { HttpError } from './admin-http.js';

/** What every route handler needs: the config in force, the store (when there is one), the audit log. */
export interface AdminContext {
  config(): LoadedConfig;
  readonly source: PolicySource | undefined;
  readonly audit: Logger;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: AdminCaller;
  }
}

/** The authenticated caller of a request (the auth hook set it); 401 when there is none. */
export function callerOf(req: FastifyRequest): AdminCaller {
  if (!req.caller)
    throw new HttpError(
      401,
      'unauthenticated',
      'log in (POST /api/login) or send Authorization: Bearer <token>',
    );
  return req.caller;
}

/**
 * A preHandler refusing with 403 unless the caller holds every one of `actions` (seed 004's app-level
 * actions; deny wins, default deny; workspace admins hold them all). The body names the first
 * missing action: `{"error":"forbidden","action":"workspace_roles",…}`. Refusals are audited.
 */
export function need(ctx: AdminContext, ...actions: AppAction[]) {
  return async (req: FastifyRequest): Promise<void> => {
    const caller = callerOf(req);
    const config = ctx.config().config;
    const missing = actions.find((a) => !editorHolds(config, caller, a));
    if (missing !== undefined) {
      auditAdmin(ctx, req, { status: 403, action: missing });
      throw new HttpError(403, 'forbidden', `this needs the app-level action ${missing}`, {
        action: missing,
      });
    }
  };
}

/** Writes one audit line for an admin request (issue 19: who, what, before/after epoch). */
export function auditAdmin(
  ctx: AdminContext,
  req: FastifyRequest,
  what: {
    status: number;
    action?: string;
    beforeEpoch?: string;
    afterEpoch?: string;
    version?: number;
    detail?: string;
  },
): void {
  ctx.audit.info(
    {
      audit: true,
      admin: true,
      identity: req.caller?.name ?? null,
      via: req.caller?.via ?? null,
      method: req.method,
      route: req.routeOptions.url ?? req.url,
      status: what.status,
      ...(what.action !== undefined ? { action: what.action } : {}),
      ...(what.beforeEpoch !== undefined ? { before_epoch: what.beforeEpoch } : {}),
      ...(what.afterEpoch !== undefined ? { after_epoch: what.afterEpoch } : {}),
      ...(what.version !== undefined ? { version: what.version } : {}),
      ...(what.detail !== undefined ? { detail: what.detail } : {}),
    },
    'admin',
  );
}

/** The version an `If-Match` header names (`"7"`, `7` or `W/"7"`); 428 when missing, 422 when unreadable. */
export function expectedVersion(req: FastifyRequest): number {
  const h = req.headers['if-match'];
  if (h === undefined)
    throw new HttpError(
      428,
      'precondition-required',
      'send If-Match with the version you read (the ETag of the GET), so that a concurrent edit is not overwritten',
    );
  const m = /^(?:W\/)?"?(\d+)"?$/.exec(String(h).trim());
  if (!m)
    throw new HttpError(422, 'invalid', 'If-Match must be a version number, as the ETag of a GET gives it');
  return Number(m[1]);
}

/** The version and epoch in force, for GET answers (and their ETag). */
export function versionOf(ctx: AdminContext, reply: FastifyReply): { version: number; epoch: string } {
  const status = ctx.source?.status();
  const version = status?.version ?? 0;
  reply.header('etag', `"${version}"`);
  return { version, epoch: status?.epoch ?? configEpoch(ctx.config().config) };
}

/** What an edit does: the object it edits (for the concurrency check) and the change itself. */
export interface Edit {
  /** The edited object as a value: compared between the version read and the version in force. */
  readonly object: (p: Policy) => unknown;
  /** The next policy (may throw HttpError: 404 for a missing object, …). */
  readonly change: (p: Policy) => Policy;
  readonly summary: string;
  /** The app-level action this edit needs (already checked by `need`; recorded in the audit line). */
  readonly action: AppAction;
  /** False for edits that cannot lose a race (a new API key, a rotation): no If-Match needed. */
  readonly ifMatch?: false;
}

/**
 * Commits one edit (issue 19): 409 when the policy is a file (no policy_store); under the store's
 * commit lock, 409 when the edited object changed since the version in `If-Match` (the loser of two
 * concurrent edits); 403 when the edit would make someone hold a rule the editor does not hold
 * (grant-limits.ts); 422 when the result does not validate (the store unchanged). After the commit
 * the instance re-reads the store at once (the others on NOTIFY). Output: the new version and epoch.
 */
export async function commitEdit(
  ctx: AdminContext,
  req: FastifyRequest,
  edit: Edit,
): Promise<{ version: number; epoch: string; committed: boolean }> {
  const caller = callerOf(req);
  const store = ctx.source?.store;
  if (!store)
    throw new HttpError(
      409,
      'read-only',
      ctx.source
        ? 'the policy store is unreachable now; this instance serves its last policy and cannot change it'
        : 'the policy is the config file; set policy_store to edit it through the API',
    );
  const expected = edit.ifMatch === false ? undefined : expectedVersion(req);
  const instance = ctx.config().config;
  try {
    const r = await store.commit(
      { author: caller.name, summary: edit.summary },
      async ({ current, policyAt }) => {
        if (expected !== undefined) {
          if (expected > current.version)
            throw new PolicyConflictError(`version ${expected} does not exist yet`, current.version);
          const read = await policyAt(expected);
          if (read === undefined) throw new PolicyConflictError(`no version ${expected}`, current.version);
          if (
            JSON.stringify(edit.object(read) ?? null) !== JSON.stringify(edit.object(current.policy) ?? null)
          )
            throw new PolicyConflictError(
              `changed since version ${expected}: someone else edited it (now at version ${current.version}); read it again`,
              current.version,
            );
        }
        const next = edit.change(structuredClone(current.policy));
        const before: Config = withPolicy(instance, current.policy);
        const beyond = grantsBeyondEditor(
          before,
          caller,
          newlyHeldRules(before, withPolicy(instance, next), Date.now()),
        );
        if (beyond.length > 0)
          throw new HttpError(403, 'beyond-editor', 'an editor can never grant more than it holds', {
            beyond,
          });
        return next;
      },
    );
    await ctx.source?.refresh();
    auditAdmin(ctx, req, {
      status: 200,
      action: edit.action,
      beforeEpoch: r.before.epoch,
      afterEpoch: r.after.epoch,
      version: r.after.version,
      detail: edit.summary,
    });
    return { version: r.after.version, epoch: r.after.epoch, committed: r.committed };
  } catch (e) {
    const status = e instanceof HttpError ? e.status : e instanceof PolicyConflictError ? 409 : 422;
    auditAdmin(ctx, req, { status, action: edit.action, detail: `${edit.summary}: ${(e as Error).message}` });
    throw e;
  }
}

/** The policy in force (the merged config's policy fields). */
export function policyNow(ctx: AdminContext): Policy {
  return policyOfConfig(ctx.config().config);
}

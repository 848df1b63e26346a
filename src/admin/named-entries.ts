// The named entries of the policy (users, groups, roles) as the admin API addresses them: the :name parameter, a lookup that 404s, DELETE with If-Match.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AppAction, Policy } from '../policy/policy-schema.js';
import { HttpError } from './admin-http.js';
import { type AdminContext, commitEdit } from './policy-edit.js';

/** The route parameter `:name` of a user, group or role: 1–63 characters (the schema's names check the rest). */
export const nameParams = z.object({ name: z.string().min(1).max(63) }).strict();

/**
 * Entry `name` of a policy record (`users`, `groups`, `roles`), undefined when it has none. Only the
 * record's own keys count: `__proto__` or `constructor` from a URL never reaches Object.prototype.
 */
export function entryOf<T>(record: Readonly<Record<string, T>>, name: string): T | undefined {
  return Object.hasOwn(record, name) ? record[name] : undefined;
}

/** Entry `name` of a policy record; HttpError 404 `not-found` with `no <noun> "<name>"` when it has none. */
export function mustEntry<T>(record: Readonly<Record<string, T>>, name: string, noun: string): T {
  const e = entryOf(record, name);
  if (e === undefined) throw new HttpError(404, 'not-found', `no ${noun} "${name}"`);
  return e;
}

/** What {@link deleteEntryRoute} registers. */
export interface DeleteEntry {
  /** `/api/<kind>/:name`. */
  readonly path: string;
  /** The gate (policy-edit.ts's need). */
  readonly preHandler: (req: FastifyRequest) => Promise<void>;
  /** The OpenAPI tag and summary. */
  readonly tag: string;
  readonly summary: string;
  /** The app-level action the edit needs (recorded in the audit line). */
  readonly action: AppAction;
  /** How the history names the edit: `<verb> <noun> <name>` (`remove user bob`, `delete role analyst`). */
  readonly verb: string;
  readonly noun: string;
  /** The record the entry lives in. */
  readonly record: (p: Policy) => Readonly<Record<string, unknown>>;
  /** The policy without entry `name` (which exists); may throw HttpError (409 while it is in use). */
  readonly remove: (p: Policy, name: string) => Policy;
}

/**
 * Registers DELETE `d.path`: removes entry `:name` under If-Match (commitEdit's answers: 409 when the
 * entry changed since the version read, 403, 422), 404 when there is no such entry.
 */
export function deleteEntryRoute(app: FastifyInstance, ctx: AdminContext, d: DeleteEntry): void {
  app.delete<{ Params: { name: string } }>(
    d.path,
    { preHandler: d.preHandler, schema: { tags: [d.tag], summary: d.summary, params: nameParams } },
    async (req) =>
      commitEdit(ctx, req, {
        action: d.action,
        summary: `${d.verb} ${d.noun} ${req.params.name}`,
        object: (p) => entryOf(d.record(p), req.params.name),
        change: (p) => {
          mustEntry(d.record(p), req.params.name, d.noun);
          return d.remove(p, req.params.name);
        },
      }),
  );
}

// Whether a session may be open on its database, and with which roles: at connect, and again after each policy reload (issue 4, issue 17).
import type { Config } from '../policy/config-schema.js';
import { type ConnectionRequest, connectionRolesAfterReload } from '../policy/connection-roles.js';
import { checkDatabaseAccess } from '../policy/database-access.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import type { ManagedRoles } from '../roles/managed-roles.js';
import { ClientError } from './client-error.js';

/**
 * Whether the caller's `roles` (resolved at connect: seeds 000-002) reach `database` over this
 * `connection` kind (seed 004, "unruled databases"; DESIGN.md "Decision" 3). Throws ClientError
 * with checkDatabaseAccess's SQLSTATE, message and detail when the database is refused.
 */
export function requireDatabaseAccess(
  config: Config,
  roles: readonly string[],
  database: string,
  connection: ConnectionKind,
): void {
  const access = checkDatabaseAccess(config, roles, database, connection);
  if (!access.ok) {
    throw new ClientError({
      severity: 'FATAL',
      code: access.sqlstate,
      message: access.message,
      ...(access.detail ? { detail: access.detail } : {}),
    });
  }
}

/** An open (non-console) session as a reload sees it. */
export interface OpenSession {
  /** Who logged in, and the role or viewer the connection named. */
  readonly login: { readonly user: string } & ConnectionRequest;
  readonly database: string;
  readonly connection: ConnectionKind;
  /** Whether the database is under `roles: managed`. */
  readonly managedDatabase: boolean;
  /** The roles its set login was made for; undefined when it is logged in as the url's login (MANAGE). */
  readonly setLoginRoles: readonly string[] | undefined;
}

/** The session goes on with `roles`, or is closed with FATAL 28000 and `message`. */
export type ReloadVerdict =
  | { readonly ok: true; readonly roles: readonly string[] }
  | { readonly ok: false; readonly message: string };

/**
 * Re-resolves an open session's roles under the reloaded policy `next` at `now` (ms since the
 * epoch). Not ok — the session is to be closed with FATAL 28000 — when the principal is gone
 * (revoked or expired key, removed or disabled user), lost its role or the database
 * (checkDatabaseAccess), or, under `roles: managed`, now needs another upstream login: a session
 * logged in as a set login holds that set's grants, and another role set is another login.
 */
export function recheckAfterReload(
  next: Config,
  s: OpenSession,
  managed: ManagedRoles,
  now: number,
): ReloadVerdict {
  const r = connectionRolesAfterReload(next, s.login, now);
  const access = r.ok ? checkDatabaseAccess(next, r.roles, s.database, s.connection) : undefined;
  if (!r.ok || !access?.ok) {
    return {
      ok: false,
      message: !r.ok ? r.message : access && !access.ok ? access.message : 'access revoked',
    };
  }
  if (s.managedDatabase && !sameUpstreamLogin(next, s, r.roles, managed)) {
    return {
      ok: false,
      message: 'your roles changed: reconnect to log in upstream as the login of your new roles',
    };
  }
  return { ok: true, roles: r.roles };
}

/** After a reload: the same set of roles (or, for a MANAGE session, still MANAGE). */
function sameUpstreamLogin(
  next: Config,
  s: OpenSession,
  roles: readonly string[],
  managed: ManagedRoles,
): boolean {
  if (s.setLoginRoles === undefined) return managed.usesUrlLogin(next, s.database, roles);
  const had = new Set(s.setLoginRoles);
  const now = new Set(roles);
  return (
    had.size === now.size &&
    [...had].every((r) => now.has(r)) &&
    !managed.usesUrlLogin(next, s.database, roles)
  );
}

// The roles a connection holds: its own identity's, or — connecting on behalf of a viewer — the viewer's alone.
import type { Config } from './config-schema.js';
import type { AppAction } from './policy-schema.js';
import { findPrincipal, type Principal } from './principals.js';
import { type RoleResolution, resolveRoles } from './resolve-roles.js';

/** What a connection asked for at startup (`-c pgwarden.role=…`, `-c pgwarden.viewer=…`). */
export interface ConnectionRequest {
  readonly requestedRole?: string;
  readonly viewer?: string;
}

/** The roles a connection holds and whose identity they are (the viewer's when there is one). */
export type ConnectionRoles =
  | { readonly ok: true; readonly roles: string[]; readonly identity: string; readonly viewer?: string }
  | { readonly ok: false; readonly sqlstate: '28000'; readonly message: string };

/**
 * Whether `roles` grant the app-level `action` (seed 004, "App-level actions"): any deny among the
 * roles refuses, else any allow grants, else refused (default deny). App-level rules carry no scope.
 */
export function holdsAppAction(config: Config, roles: readonly string[], action: AppAction): boolean {
  const rules = roles.flatMap((r) =>
    Object.hasOwn(config.roles, r) ? (config.roles[r]?.permissions ?? []) : [],
  );
  const matching = rules.filter((p) => p.actions.includes(action) && p.database === undefined);
  if (matching.some((p) => p.effect === 'deny')) return false;
  return matching.some((p) => p.effect === 'allow');
}

function refused(message: string): ConnectionRoles {
  return { ok: false, sqlstate: '28000', message };
}

function fromResolution(r: RoleResolution, identity: string, viewer?: string): ConnectionRoles {
  if (!r.ok) return r;
  return viewer === undefined
    ? { ok: true, roles: r.roles, identity }
    : { ok: true, roles: r.roles, identity, viewer };
}

/**
 * Resolves a connection's roles at connect (and again after a reload).
 * - No viewer: the principal's own roles (seed 000's table, resolveRoles).
 * - A viewer (issue 8, seeds 001/002): the principal must hold the app-level permission
 *   `connect_as_viewer` through its own roles (workspace admin status adds nothing); the viewer
 *   must be a known, enabled workspace user; the connection then holds the viewer's roles,
 *   resolved by seed 000's table for the viewer's identity — never the principal's, never a mix
 *   (seed 002: "one identity decides both the default and the added roles"); a named role pins the
 *   connection to that role alone when the viewer may use it. A viewer that resolves to no role is
 *   refused (seed 002: "refused, never resolved as the job").
 * Output: the roles and identity, or the FATAL 28000 message. `now` in ms since the epoch. Pure.
 */
export function resolveConnectionRoles(
  config: Config,
  principal: Principal,
  request: ConnectionRequest,
  now: number,
): ConnectionRoles {
  const role = request.requestedRole !== undefined ? { requestedRole: request.requestedRole } : {};
  if (request.viewer === undefined)
    return fromResolution(resolveRoles(config, principal, role), principal.name);

  const own = resolveRoles(config, principal, {});
  if (!own.ok || !holdsAppAction(config, own.roles, 'connect_as_viewer')) {
    return refused(
      `"${principal.name}" may not connect on behalf of another user (it lacks connect_as_viewer)`,
    );
  }
  const viewer = findPrincipal(config, request.viewer, now);
  if (viewer?.kind !== 'user') return refused(`viewer "${request.viewer}" is unknown or disabled`);
  const r = resolveRoles(config, viewer, role);
  if (!r.ok) return refused(`viewer "${request.viewer}" resolves to no role: ${r.message}`);
  return fromResolution(r, viewer.name, viewer.name);
}

/**
 * The same resolution for an open session after a reload (issue 4: "After a policy reload every
 * open session's roles are resolved again; a session whose identity lost every role, or whose
 * key was revoked or expired, is closed with FATAL 28000"; call it on reload and on a timer for
 * key expiry): the principal must still exist — a revoked or expired key, a removed or disabled
 * user is refused, saying which — then as at connect.
 */
export function connectionRolesAfterReload(
  config: Config,
  login: { readonly user: string } & ConnectionRequest,
  now: number,
): ConnectionRoles {
  const principal = findPrincipal(config, login.user, now);
  if (!principal) return refused(goneReason(config, login.user, now));
  return resolveConnectionRoles(config, principal, login, now);
}

/** Why `user` no longer logs in under `config` at `now`: revoked, expired, disabled or gone. */
function goneReason(config: Config, user: string, now: number): string {
  const key = config.api_keys.find((k) => k.id === user);
  if (key?.revoked) return `API key "${user}" was revoked`;
  if (key && key.expires_at !== null && Date.parse(key.expires_at) <= now)
    return `API key "${user}" has expired`;
  if (Object.hasOwn(config.users, user) && config.users[user]?.disabled) return `user "${user}" is disabled`;
  return `user "${user}" no longer exists`;
}

// Role resolution at connect: a named role alone, or the default role plus every role whose tenants name the identity.
import type { Config } from './config-schema.js';
import type { Principal } from './principals.js';

/** The outcome of {@link resolveRoles}: the roles held, or the FATAL 28000 to send. */
export type RoleResolution =
  | { readonly ok: true; readonly roles: string[] }
  | { readonly ok: false; readonly sqlstate: '28000'; readonly message: string };

/**
 * The name seed 000 gives the data table's original connection. pgwarden has no built-in role of
 * that name (issue 4); a role the config defines under it follows seed 000's rules for `admin`.
 */
export const ADMIN_ROLE = 'admin';

/** The groups of `config.groups` that list `user` as a member, in config order. */
export function groupsOf(config: Config, user: string): string[] {
  return Object.entries(config.groups)
    .filter(([, g]) => g.members.includes(user))
    .map(([name]) => name);
}

/**
 * True when a tenant list of `role` names workspace user `user`: `*`, `u/<user>`, or `g/<group>`
 * for a group listing the user. Source: seed 000, "Tenant patterns" (folders have no equivalent here).
 */
export function isTenant(config: Config, role: string, user: string): boolean {
  const r = Object.hasOwn(config.roles, role) ? config.roles[role] : undefined;
  if (!r) return false;
  const groups = new Set(groupsOf(config, user));
  return r.tenants.some(
    (t) => t === '*' || t === `u/${user}` || (t.startsWith('g/') && groups.has(t.slice(2))),
  );
}

/** True when `user` is a workspace admin (seed 000: "Workspace admins … can always use any role … by naming it"). */
export function isWorkspaceAdmin(config: Config, user: string): boolean {
  return config.workspace_admins.includes(user);
}

function noRole(message: string): RoleResolution {
  return { ok: false, sqlstate: '28000', message };
}

/**
 * The roles a connection holds (issue 4 "Role resolution"; seed 000 "Connections that name no role"
 * and "Tenant patterns"; seed 002's table).
 * Inputs: the config, the authenticated principal, and `requestedRole` (startup option
 * `-c pgwarden.role=NAME`; absent or empty when the connection names none).
 * Output: `{ ok: true, roles }` (never empty, no duplicates, the default role first), or a refusal
 * `{ ok: false, sqlstate: '28000', message }` to send as FATAL:
 * - a named role that does not exist, or that the identity may not use (not a tenant of it, not a
 *   workspace admin) — seed 000: a named role is held "alone, whoever runs the job", and
 *   "Workspace admins … can always use any role regardless of tenant assignments, by naming it";
 * - no role at all — seed 000: "A connection left with no role at all is refused with an error
 *   instead of returning no rows".
 * A connection naming no role holds, per seed 000's table:
 * - default role `admin` (only when the config defines a role of that name, see {@link ADMIN_ROLE}):
 *   `admin` when the identity is a workspace admin or a tenant of it, and no other role;
 * - another default role: that role when the identity may use it (a tenant or a workspace admin),
 *   plus every role whose tenants name the identity;
 * - no default role: only the roles whose tenants name the identity.
 * Only tenant lists add roles: being a workspace admin adds none, and `admin` is never added
 * (seed 000: "being an admin adds no role to a connection that names none, and `admin` is never added").
 * An API key (issue 4) holds exactly its own roles: no default role, no tenant roles; it may name one
 * of its own roles to narrow to it, and no other.
 * Pure; never throws.
 */
export function resolveRoles(
  config: Config,
  principal: Principal,
  opts: { readonly requestedRole?: string },
): RoleResolution {
  const requested = opts.requestedRole === '' ? undefined : opts.requestedRole;
  const exists = (r: string) => Object.hasOwn(config.roles, r);

  if (principal.kind === 'api-key') {
    const own = principal.roles.filter(exists);
    if (requested !== undefined) {
      if (!own.includes(requested)) {
        return noRole(`API key "${principal.name}" does not hold role "${requested}"`);
      }
      return { ok: true, roles: [requested] };
    }
    if (own.length === 0)
      return noRole(`no role: API key "${principal.name}" holds no role of the workspace`);
    return { ok: true, roles: [...new Set(own)] };
  }

  const user = principal.name;
  const admin = isWorkspaceAdmin(config, user);
  if (requested !== undefined) {
    if (!exists(requested)) return noRole(`role "${requested}" does not exist`);
    if (!admin && !isTenant(config, requested, user)) {
      return noRole(`user "${user}" may not use role "${requested}"`);
    }
    return { ok: true, roles: [requested] };
  }

  const roles: string[] = [];
  const def = config.default_role;
  if (def !== null && exists(def) && (admin || isTenant(config, def, user))) roles.push(def);
  if (def !== ADMIN_ROLE) {
    for (const role of Object.keys(config.roles)) {
      if (role === ADMIN_ROLE || roles.includes(role)) continue;
      if (isTenant(config, role, user)) roles.push(role);
    }
  }
  if (roles.length === 0) return noRole(noRoleMessage(config, user, def));
  return { ok: true, roles };
}

/** Why a connection naming no role holds none, in the terms of the config a user wrote. */
function noRoleMessage(config: Config, user: string, def: string | null): string {
  const why =
    def === null ? 'there is no default role' : `user "${user}" may not use the default role "${def}"`;
  if (def !== ADMIN_ROLE && isTenant(config, ADMIN_ROLE, user)) {
    // The tenant list names the user, yet the role is not held: say why rather than "a tenant of no role".
    return (
      `no role: user "${user}" is a tenant only of role "${ADMIN_ROLE}", which a connection holds only when it ` +
      `names it (-c pgwarden.role=${ADMIN_ROLE}) or when it is the default role; ${why}`
    );
  }
  return `no role: user "${user}" is a tenant of no role and ${why.replace(`user "${user}" `, '')}`;
}

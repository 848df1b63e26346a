// Roles of an open session after a policy reload: resolved again, or the FATAL 28000 that closes the session.
import type { Config } from './config-schema.js';
import { findPrincipal } from './principals.js';
import { type RoleResolution, resolveRoles } from './resolve-roles.js';

/** What a session remembers of its login, to resolve its roles again. */
export interface SessionLogin {
  /** The startup `user`: a workspace user or an API key id. */
  readonly user: string;
  /** The role the connection named (`-c pgwarden.role=NAME`), if any. */
  readonly requestedRole?: string;
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

/**
 * Resolves an open session's roles again under a reloaded `config` at `now` (ms). Output: the new
 * roles (the session decides with them from its next statement on), or `{ ok: false, sqlstate:
 * '28000', message }` — send it as FATAL and close the session — when the principal is gone
 * (revoked or expired key, disabled or removed user), may no longer use the role it named, or holds
 * no role at all. Source: issue 4, "After a policy reload every open session's roles are resolved
 * again; a session whose identity lost every role, or whose key was revoked or expired, is closed
 * with FATAL 28000". Call it for every session on reload, and on a timer for key expiry. Pure.
 */
export function rolesAfterReload(config: Config, login: SessionLogin, now: number): RoleResolution {
  const principal = findPrincipal(config, login.user, now);
  if (!principal) return { ok: false, sqlstate: '28000', message: goneReason(config, login.user, now) };
  return resolveRoles(
    config,
    principal,
    login.requestedRole !== undefined ? { requestedRole: login.requestedRole } : {},
  );
}

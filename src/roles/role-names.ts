// Names upstream under `roles: managed`: a workspace role's PostgreSQL role, and a role set's login `pgwarden_set_<hash>`.
import crypto from 'node:crypto';

/** The prefix of every set login (DESIGN.md "Three walls": seed 002's `wm_set_<hash>`, here pgwarden's). */
export const SET_LOGIN_PREFIX = 'pgwarden_set_';

/** The comment pgwarden puts on every role it makes, so it never adopts a role someone else made. */
export const WORKSPACE_ROLE_COMMENT = 'pgwarden workspace role';
/** The comment on a set login. */
export const SET_LOGIN_COMMENT = 'pgwarden role set login';

/**
 * The PostgreSQL role of workspace role `role`: the database's `role_prefix` (default none) and the
 * name, e.g. `ws1_analyst`. The config checks the result is at most 63 characters (NAMEDATALEN - 1).
 */
export function managedRoleName(prefix: string | undefined, role: string): string {
  return `${prefix ?? ''}${role}`;
}

/**
 * The login of a role set in one database: `pgwarden_set_` and 24 hex digits of SHA-256 over the
 * database's OID and the member roles' catalog OIDs, sorted (seed 002: "the hash is over their
 * catalog ids, so a rename moves nothing"). The database OID is part of it so that a login's
 * grants, bookkeeping row and password live in one database only: a sweep in one database never
 * drops a login another one uses. Input: OIDs as numbers; output: a 37-character role name.
 */
export function setLoginName(databaseOid: number, roleOids: readonly number[]): string {
  const key = `${databaseOid}:${[...new Set(roleOids)].sort((a, b) => a - b).join(',')}`;
  return SET_LOGIN_PREFIX + crypto.createHash('sha256').update(key).digest('hex').slice(0, 24);
}

/** A fresh random password for a set login: 32 characters of base64url (192 bits). */
export function newLoginPassword(): string {
  return crypto.randomBytes(24).toString('base64url');
}

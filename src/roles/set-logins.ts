// Set logins: made on first use, taken back when their row or password is lost, retired row first (seed 002).
import pg from 'pg';
import { deleteRow, putRow, ROLES_LOCK_SQL, rowOf } from './bookkeeping.js';
import { newLoginPassword, SET_LOGIN_COMMENT } from './role-names.js';
import { ForeignRoleError } from './workspace-roles.js';

/** One member role of a set: its config name, its PostgreSQL name and pg_authid OID. */
export interface SetMember {
  readonly role: string;
  readonly pgName: string;
  readonly oid: number;
}

/** What {@link ensureSetLogin} needs. */
export interface EnsureSetLogin {
  readonly login: string;
  /** The bookkeeping row's workspace: the database's role_prefix, '' when none. */
  readonly workspace: string;
  readonly members: readonly SetMember[];
  /**
   * Take the login back even when its row looks right: the password pgwarden holds (`known`) was
   * refused (28P01). When the row's password differs from `known`, another instance changed it and
   * the row's is used as it is.
   */
  readonly rejected?: { readonly known: string };
  /** Brings the login's grants to what the rules give its set (inside the same transaction). */
  readonly grant: (client: pg.ClientBase, loginOid: number) => Promise<void>;
}

interface LoginRole {
  oid: number;
  rolcanlogin: boolean;
  rolinherit: boolean;
  comment: string | null;
  member_of: string[];
  /** The same roles' names, quoted as identifiers, in the same order. */
  member_names: string[];
}

async function readLogin(client: pg.ClientBase, login: string): Promise<LoginRole | undefined> {
  const r = await client.query<LoginRole & { oid: string }>(
    `SELECT r.oid::int8 AS oid, r.rolcanlogin, r.rolinherit, shobj_description(r.oid, 'pg_authid') AS comment,
            ARRAY(SELECT m.roleid::int8 FROM pg_auth_members m WHERE m.member = r.oid ORDER BY m.roleid) AS member_of,
            ARRAY(SELECT quote_ident(g.rolname) FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid
                   WHERE m.member = r.oid ORDER BY m.roleid) AS member_names
       FROM pg_roles r WHERE r.rolname = $1`,
    [login],
  );
  const row = r.rows[0];
  return row ? { ...row, oid: Number(row.oid) } : undefined;
}

/**
 * Makes sure `login` exists as seed 002 and issue 17 describe, in one transaction under the roles
 * lock: LOGIN, NOINHERIT (its privileges are its own grants; the roles are for `pg_has_role`), a
 * member of exactly `members`, with a random password that the bookkeeping row holds. The row is
 * written in the same commit as the login, so a row always names a login that exists and
 * authenticates with the row's password. A login without a row, with other memberships, or whose
 * password was refused is taken back with a new password. Output: the password to log in with, and
 * whether the login was made or taken back now. Rejects with {@link ForeignRoleError} for a role of
 * that name pgwarden did not make, and with pg's error otherwise (rolled back).
 */
export async function ensureSetLogin(
  client: pg.ClientBase,
  e: EnsureSetLogin,
): Promise<{ password: string; changed: 'made' | 'taken-back' | null }> {
  await client.query('BEGIN');
  try {
    await client.query(ROLES_LOCK_SQL);
    const row = await rowOf(client, e.login);
    const role = await readLogin(client, e.login);
    if (role && role.comment !== SET_LOGIN_COMMENT)
      throw new ForeignRoleError(e.login, 'was not made by pgwarden');
    const want = new Set(e.members.map((m) => m.oid));
    const exact =
      role !== undefined &&
      role.member_of.length === want.size &&
      role.member_of.every((o) => want.has(Number(o)));
    const sound = row !== undefined && role !== undefined && role.rolcanlogin && !role.rolinherit && exact;
    if (sound && (!e.rejected || row.password !== e.rejected.known)) {
      await client.query('COMMIT');
      return { password: row.password, changed: null };
    }
    const password = newLoginPassword();
    const id = pg.escapeIdentifier(e.login);
    const pw = pg.escapeLiteral(password);
    let oid: number;
    if (!role) {
      const inRole = e.members.map((m) => pg.escapeIdentifier(m.pgName)).join(', ');
      await client.query(`CREATE ROLE ${id} LOGIN NOINHERIT PASSWORD ${pw} IN ROLE ${inRole}`);
      await client.query(`COMMENT ON ROLE ${id} IS ${pg.escapeLiteral(SET_LOGIN_COMMENT)}`);
      oid = (await readLogin(client, e.login))?.oid ?? 0;
    } else {
      await client.query(`ALTER ROLE ${id} LOGIN NOINHERIT PASSWORD ${pw}`);
      for (const m of e.members)
        if (!role.member_of.some((o) => Number(o) === m.oid))
          await client.query(`GRANT ${pg.escapeIdentifier(m.pgName)} TO ${id}`);
      for (const [i, o] of role.member_of.entries())
        if (!want.has(Number(o))) await client.query(`REVOKE ${role.member_names[i]} FROM ${id}`);
      oid = role.oid;
    }
    await e.grant(client, oid);
    await putRow(client, {
      login: e.login,
      workspace: e.workspace,
      roles: e.members.map((m) => m.role),
      roleOids: e.members.map((m) => m.oid),
      password,
    });
    await client.query('COMMIT');
    return { password, changed: role ? 'taken-back' : 'made' };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/**
 * Retires a set login (seed 002: "The row is written after the login exists and removed, in its own
 * commit, before the login is dropped"): deletes its row and commits; then, under the roles lock
 * and only if no row came back meanwhile (another instance made it again), revokes what it holds
 * (`revokeAll`) and drops it. A login that cannot be dropped (privileges in another database, say)
 * is made NOLOGIN with a new unknown password instead. Output: what happened. Rejects only for the
 * row's deletion.
 */
export async function retireSetLogin(
  client: pg.ClientBase,
  login: string,
  revokeAll: (client: pg.ClientBase, loginOid: number) => Promise<void>,
): Promise<'dropped' | 'locked' | 'kept'> {
  await client.query('BEGIN');
  try {
    await client.query(ROLES_LOCK_SQL);
    await deleteRow(client, login);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
  const id = pg.escapeIdentifier(login);
  try {
    await client.query('BEGIN');
    await client.query(ROLES_LOCK_SQL);
    if (await rowOf(client, login)) {
      await client.query('COMMIT');
      return 'kept';
    }
    const role = await readLogin(client, login);
    if (role && role.comment === SET_LOGIN_COMMENT) {
      await revokeAll(client, role.oid);
      await client.query(`DROP ROLE ${id}`);
    }
    await client.query('COMMIT');
    return 'dropped';
  } catch {
    await client.query('ROLLBACK').catch(() => {});
    await client
      .query(`ALTER ROLE ${id} NOLOGIN PASSWORD ${pg.escapeLiteral(newLoginPassword())}`)
      .catch(() => {});
    return 'locked';
  }
}

// The bookkeeping of set logins: the `pgwarden.role_set_logins` table of a managed database, and the advisory lock.
import pg from 'pg';

/** How long a change to managed roles waits for a lock other than the roles lock (ms). */
export const ROLES_LOCK_TIMEOUT_MS = 1000;

/**
 * The advisory lock every change to managed roles takes (role creation, set logins, grant sync,
 * sweeps), as a transaction lock in the database being changed: two pgwarden instances syncing at
 * once are serialized, and neither errors (issue 17 "Two instances syncing at once").
 * The two keys are 'pgwd' and 17. Once it is held, the rest of the transaction waits at most
 * {@link ROLES_LOCK_TIMEOUT_MS} for any other lock (issue 15: a GRANT on a table whose pg_class row a
 * client's open transaction has changed waits for that transaction; the sync fails with 55P03
 * lock_not_available instead, the previous grants stand, and it is tried again). The wait for the
 * advisory lock itself is not bounded: another instance holding it is bounded the same way.
 */
export const ROLES_LOCK_SQL = `SELECT pg_advisory_xact_lock(1885828964, 17); SET LOCAL lock_timeout = '${ROLES_LOCK_TIMEOUT_MS}ms'`;

/**
 * One row per set login this database's workspaces use (seed 002: "A datatable_role_set row with a
 * password names a login that can authenticate with it"). `workspace` is the database's
 * role_prefix ('' when none): a sweep goes by its own workspace's rows. The schema and table are
 * the administration login's, with no privilege for anyone else (the passwords are in it), and no
 * set login is ever granted anything in schema `pgwarden`.
 */
export const BOOKKEEPING_DDL = `
CREATE SCHEMA IF NOT EXISTS pgwarden;
REVOKE ALL ON SCHEMA pgwarden FROM PUBLIC;
CREATE TABLE IF NOT EXISTS pgwarden.role_set_logins (
  login name PRIMARY KEY,
  workspace text NOT NULL,
  roles text[] NOT NULL,
  role_oids oid[] NOT NULL,
  password text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON pgwarden.role_set_logins FROM PUBLIC;
`;

/** The schema pgwarden keeps to itself in a managed database; no grant is ever computed in it. */
export const BOOKKEEPING_SCHEMA = 'pgwarden';

/** One bookkeeping row. Times as Date. */
export interface SetLoginRow {
  readonly login: string;
  readonly workspace: string;
  readonly roles: readonly string[];
  readonly roleOids: readonly number[];
  readonly password: string;
  readonly lastUsedAt: Date;
}

interface RawRow {
  login: string;
  workspace: string;
  roles: string[];
  role_oids: string[] | number[];
  password: string;
  last_used_at: Date;
}

function fromRaw(r: RawRow): SetLoginRow {
  return {
    login: r.login,
    workspace: r.workspace,
    roles: r.roles,
    roleOids: r.role_oids.map(Number),
    password: r.password,
    lastUsedAt: r.last_used_at,
  };
}

const COLUMNS = 'login, workspace, roles, role_oids::int8[] AS role_oids, password, last_used_at';

/** Creates the schema and table when missing (under {@link ROLES_LOCK_SQL}: concurrent CREATEs race). */
export async function ensureBookkeeping(client: pg.ClientBase): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(ROLES_LOCK_SQL);
    await client.query(BOOKKEEPING_DDL);
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

/** Every row of `workspace`, by login name. */
export async function workspaceRows(client: pg.ClientBase, workspace: string): Promise<SetLoginRow[]> {
  const r = await client.query<RawRow>(
    `SELECT ${COLUMNS} FROM pgwarden.role_set_logins WHERE workspace = $1 ORDER BY login`,
    [workspace],
  );
  return r.rows.map(fromRaw);
}

/** The query of {@link workspaceRows} with `workspace` as a literal (to send in a message of several statements). */
export function workspaceRowsSql(workspace: string): string {
  return `SELECT ${COLUMNS} FROM pgwarden.role_set_logins WHERE workspace = ${pg.escapeLiteral(workspace)} ORDER BY login`;
}

/** The rows of `workspace` from the result of {@link workspaceRowsSql}. */
export function workspaceRowsOf(result: pg.QueryResult): SetLoginRow[] {
  return (result.rows as RawRow[]).map(fromRaw);
}

/** The row of `login`, or undefined. */
export async function rowOf(client: pg.ClientBase, login: string): Promise<SetLoginRow | undefined> {
  const r = await client.query<RawRow>(`SELECT ${COLUMNS} FROM pgwarden.role_set_logins WHERE login = $1`, [
    login,
  ]);
  return r.rows[0] ? fromRaw(r.rows[0]) : undefined;
}

/** Writes (inserts or replaces) the row of a login that exists now and authenticates with `row.password`. */
export async function putRow(client: pg.ClientBase, row: Omit<SetLoginRow, 'lastUsedAt'>): Promise<void> {
  await client.query(
    `INSERT INTO pgwarden.role_set_logins (login, workspace, roles, role_oids, password)
     VALUES ($1, $2, $3, $4::int8[]::oid[], $5)
     ON CONFLICT (login) DO UPDATE SET workspace = excluded.workspace, roles = excluded.roles,
       role_oids = excluded.role_oids, password = excluded.password, last_used_at = now()`,
    [row.login, row.workspace, row.roles, row.roleOids, row.password],
  );
}

/** Deletes the row of `login` (its own statement; the caller commits before dropping the login). */
export async function deleteRow(client: pg.ClientBase, login: string): Promise<void> {
  await client.query('DELETE FROM pgwarden.role_set_logins WHERE login = $1', [login]);
}

/** Sets `last_used_at` to now for `login` (issue 17: written at most once a day; the caller decides when). */
export async function touchRow(client: pg.ClientBase, login: string): Promise<void> {
  await client.query('UPDATE pgwarden.role_set_logins SET last_used_at = now() WHERE login = $1', [login]);
}

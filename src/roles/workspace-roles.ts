// The workspace's roles as PostgreSQL roles: NOLOGIN, made by pgwarden (marked by a comment), OIDs read back.
import pg from 'pg';
import { WORKSPACE_ROLE_COMMENT } from './role-names.js';

/** A managed role upstream that pgwarden must not use (someone else's, or able to log in). */
export class ForeignRoleError extends Error {
  readonly sqlstate = '42710';
  constructor(role: string, why: string) {
    super(
      `role "${role}" exists in the cluster and ${why}; pgwarden uses only roles it made: rename the workspace role, or set the database's role_prefix`,
    );
    this.name = 'ForeignRoleError';
  }
}

interface RoleRow {
  oid: number;
  rolname: string;
  rolcanlogin: boolean;
  rolsuper: boolean;
  comment: string | null;
}

async function readRoles(client: pg.ClientBase, names: readonly string[]): Promise<Map<string, RoleRow>> {
  const r = await client.query<RoleRow>(
    `SELECT r.oid::int8 AS oid, r.rolname, r.rolcanlogin, r.rolsuper,
            shobj_description(r.oid, 'pg_authid') AS comment
       FROM pg_roles r WHERE r.rolname = ANY($1::text[])`,
    [names],
  );
  return new Map(r.rows.map((x) => [x.rolname, { ...x, oid: Number(x.oid) }]));
}

/**
 * Makes sure every name of `names` is a PostgreSQL role pgwarden made: NOLOGIN, NOINHERIT, no
 * privileges of its own (issue 17: "it exists for membership tests"; grant sync revokes any it
 * is given), commented {@link WORKSPACE_ROLE_COMMENT}. A missing one is created; one made
 * concurrently by another instance (42710 duplicate_object, 23505 on pg_authid) is read back.
 * Output: name → pg_authid OID. Rejects with {@link ForeignRoleError} for a role of that name that
 * pgwarden did not make or that can log in or is a superuser, and with pg's error (42501 without
 * CREATEROLE).
 */
export async function ensureWorkspaceRoles(
  client: pg.ClientBase,
  names: readonly string[],
): Promise<Map<string, number>> {
  let found = await readRoles(client, names);
  for (const name of names) {
    if (found.has(name)) continue;
    const id = pg.escapeIdentifier(name);
    // One transaction: another instance sees the role with its comment or not at all (its own
    // CREATE waits on the unique index of pg_authid, then fails with 23505 or 42710).
    try {
      await client.query('BEGIN');
      await client.query(`CREATE ROLE ${id} NOLOGIN NOINHERIT`);
      await client.query(`COMMENT ON ROLE ${id} IS ${pg.escapeLiteral(WORKSPACE_ROLE_COMMENT)}`);
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      const code = (e as { code?: string }).code;
      if (code !== '42710' && code !== '23505') throw e;
    }
  }
  found = await readRoles(client, names);
  const out = new Map<string, number>();
  for (const name of names) {
    const r = found.get(name);
    if (!r) throw new Error(`role "${name}" could not be created`);
    if (r.comment !== WORKSPACE_ROLE_COMMENT) throw new ForeignRoleError(name, 'was not made by pgwarden');
    if (r.rolcanlogin || r.rolsuper) throw new ForeignRoleError(name, 'can log in or is a superuser');
    out.set(name, r.oid);
  }
  return out;
}

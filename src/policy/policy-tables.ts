// The policy's rows in the `pgwarden` schema: read in one snapshot into a StoredPolicy, written from a Policy, an earlier version read.
import type pg from 'pg';
import { emptyPolicy, policyEpoch, validatePolicy } from './policy-document.js';
import type { Policy } from './policy-schema.js';

/** The policy in force in the store: its version (0 before the first commit), epoch, and who committed it when. */
export interface StoredPolicy {
  readonly version: number;
  readonly epoch: string;
  readonly policy: Policy;
  readonly author: string | null;
  /** ISO date-time of the commit; null for version 0. */
  readonly createdAt: string | null;
}

/**
 * The policy of an earlier `version` from `pgwarden.policy_versions` (0: the empty policy), validated
 * (PolicyInvalidError for a row that no longer validates); undefined when there is no such version.
 * Rejects with pg's error when the query fails.
 */
export async function policyAtVersion(client: pg.ClientBase, version: number): Promise<Policy | undefined> {
  if (version === 0) return emptyPolicy();
  const r = await client.query<{ policy: unknown }>(
    'SELECT policy FROM pgwarden.policy_versions WHERE version = $1',
    [version],
  );
  const row = r.rows[0];
  return row ? validatePolicy(row.policy) : undefined;
}

type Row = Record<string, unknown>;

/**
 * Reads every policy table into a Policy (validated: PolicyInvalidError when the rows do not make a
 * valid policy) and the latest version row, inside the caller's transaction (REPEATABLE READ, so one
 * snapshot). Version 0 with null author and time when nothing was committed. Rejects with pg's error.
 */
export async function readCurrent(client: pg.ClientBase): Promise<StoredPolicy> {
  const q = async (sql: string) => (await client.query<Row>(sql)).rows;
  const rows: Row[][] = [];
  // One after another: a pg client runs one query at a time.
  for (const sql of [
    'SELECT name, value FROM pgwarden.policy_settings',
    'SELECT name, scram, disabled FROM pgwarden.policy_users ORDER BY ord',
    'SELECT name FROM pgwarden.policy_groups ORDER BY ord',
    'SELECT group_name, member FROM pgwarden.policy_group_members ORDER BY group_name, ord',
    'SELECT name, description FROM pgwarden.policy_roles ORDER BY ord',
    'SELECT role_name, pattern FROM pgwarden.policy_tenants ORDER BY role_name, ord',
    `SELECT role_name, effect, actions, database_name, schema_name, table_name, column_name
       FROM pgwarden.policy_permissions ORDER BY role_name, ord`,
    `SELECT id, scram, previous_scram, previous_expires_at, roles, description, created_at, expires_at, revoked
       FROM pgwarden.policy_api_keys ORDER BY ord`,
    'SELECT version, author, created_at FROM pgwarden.policy_versions ORDER BY version DESC LIMIT 1',
  ])
    rows.push(await q(sql));
  const [
    settings = [],
    users = [],
    groups = [],
    members = [],
    roles = [],
    tenants = [],
    perms = [],
    keys = [],
    head = [],
  ] = rows;
  const setting = (name: string) => settings.find((s) => s.name === name)?.value;
  const raw = {
    workspace: setting('workspace') ?? {},
    workspace_admins: setting('workspace_admins') ?? [],
    default_role: setting('default_role') ?? null,
    users: Object.fromEntries(
      users.map((u) => [u.name, { scram: u.scram, ...(u.disabled ? { disabled: true } : {}) }]),
    ),
    groups: Object.fromEntries(
      groups.map((g) => [
        g.name,
        { members: members.filter((m) => m.group_name === g.name).map((m) => m.member) },
      ]),
    ),
    roles: Object.fromEntries(
      roles.map((r) => [
        r.name,
        {
          ...(r.description !== null ? { description: r.description } : {}),
          tenants: tenants.filter((t) => t.role_name === r.name).map((t) => t.pattern),
          permissions: perms
            .filter((p) => p.role_name === r.name)
            .map((p) =>
              dropNulls({
                effect: p.effect,
                actions: p.actions,
                database: p.database_name,
                schema: p.schema_name,
                table: p.table_name,
                column: p.column_name,
              }),
            ),
        },
      ]),
    ),
    api_keys: keys.map((k) => ({ ...dropNulls({ ...k, expires_at: undefined }), expires_at: k.expires_at })),
  };
  const policy = validatePolicy(raw);
  const h = head[0];
  return {
    version: h ? Number(h.version) : 0,
    epoch: policyEpoch(policy),
    policy,
    author: h ? String(h.author) : null,
    createdAt: h ? (h.created_at as Date).toISOString() : null,
  };
}

/** `o` without its null and undefined fields (rows read back as a policy's optional fields). */
function dropNulls(o: Row): Row {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined));
}

/**
 * Replaces the content of every policy table by `p` (inside the caller's transaction): settings, users,
 * groups and members, roles with tenants and permissions, API keys, each in the policy's order (`ord`).
 * Rejects with pg's error (the caller rolls back).
 */
export async function writeTables(client: pg.ClientBase, p: Policy): Promise<void> {
  await client.query(`DELETE FROM pgwarden.policy_group_members; DELETE FROM pgwarden.policy_groups;
    DELETE FROM pgwarden.policy_users; DELETE FROM pgwarden.policy_tenants; DELETE FROM pgwarden.policy_permissions;
    DELETE FROM pgwarden.policy_roles; DELETE FROM pgwarden.policy_api_keys; DELETE FROM pgwarden.policy_settings`);
  const ins = (sql: string, values: unknown[]) => client.query(sql, values);
  for (const [name, value] of [
    ['workspace', p.workspace],
    ['workspace_admins', p.workspace_admins],
    ['default_role', p.default_role],
  ] as const)
    await ins('INSERT INTO pgwarden.policy_settings (name, value) VALUES ($1, $2)', [
      name,
      JSON.stringify(value),
    ]);
  let ord = 0;
  for (const [name, u] of Object.entries(p.users))
    await ins('INSERT INTO pgwarden.policy_users (name, ord, scram, disabled) VALUES ($1, $2, $3, $4)', [
      name,
      ord++,
      u.scram,
      u.disabled,
    ]);
  ord = 0;
  for (const [name, g] of Object.entries(p.groups)) {
    await ins('INSERT INTO pgwarden.policy_groups (name, ord) VALUES ($1, $2)', [name, ord++]);
    for (const [i, m] of g.members.entries())
      await ins('INSERT INTO pgwarden.policy_group_members (group_name, ord, member) VALUES ($1, $2, $3)', [
        name,
        i,
        m,
      ]);
  }
  ord = 0;
  for (const [name, r] of Object.entries(p.roles)) {
    await ins('INSERT INTO pgwarden.policy_roles (name, ord, description) VALUES ($1, $2, $3)', [
      name,
      ord++,
      r.description ?? null,
    ]);
    for (const [i, t] of r.tenants.entries())
      await ins('INSERT INTO pgwarden.policy_tenants (role_name, ord, pattern) VALUES ($1, $2, $3)', [
        name,
        i,
        t,
      ]);
    for (const [i, x] of r.permissions.entries())
      await ins(
        `INSERT INTO pgwarden.policy_permissions
           (role_name, ord, effect, actions, database_name, schema_name, table_name, column_name)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [
          name,
          i,
          x.effect,
          x.actions,
          x.database ?? null,
          x.schema ?? null,
          x.table ?? null,
          x.column ?? null,
        ],
      );
  }
  for (const [i, k] of p.api_keys.entries())
    await ins(
      `INSERT INTO pgwarden.policy_api_keys
         (id, ord, scram, previous_scram, previous_expires_at, roles, description, created_at, expires_at, revoked)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        k.id,
        i,
        k.scram,
        k.previous_scram ?? null,
        k.previous_expires_at ?? null,
        k.roles,
        k.description ?? null,
        k.created_at ?? null,
        k.expires_at,
        k.revoked,
      ],
    );
}

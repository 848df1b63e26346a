// One grant sync transaction of a managed database: every login over the whole catalog, or only the relations a catalog change reaches.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Catalog, CatalogRelation } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import { loadParser, majorOfServerVersion } from '../sql/parser.js';
import { ROLES_LOCK_SQL, type SetLoginRow } from './bookkeeping.js';
import { applyGrantsAndCommit, type RoleGrants } from './grant-apply.js';
import {
  derivedGrants,
  isUnmanagedSchema,
  type PrivilegeKey,
  planRelations,
  relationsByOid,
} from './grant-plan.js';
import {
  type DefaultsRow,
  defaultSequencesSql,
  defaultsFromRows,
  grantableOnly,
  type HeldPrivileges,
  type HeldRow,
  type HeldScope,
  heldFromRows,
  heldPrivilegesSql,
  oidArray,
  readHeldPrivilegesOf,
  textArray,
  type Ungrantable,
  type UngrantableRow,
  ungrantableFromRows,
  ungrantableSql,
} from './grant-sync.js';
import { managedRoleName } from './role-names.js';

/** What a sync of one database needs to know of it. */
export interface GrantRun {
  readonly config: Config;
  /** The client-facing database name (rules are scoped by it). */
  readonly database: string;
  /** The database's role_prefix, '' when none. */
  readonly workspace: string;
  readonly connection: ConnectionKind;
  readonly log: Logger;
  /** Workspace role (config name) → pg_authid OID of its PostgreSQL role. */
  readonly roleOids: ReadonlyMap<string, number>;
}

/** Per relation OID: 1 when the set gets some privilege on it, 2 when it may write it (bits; 0 left out). */
type Flags = Map<number, number>;

/**
 * What the last successful sync of a database was computed from, for the next one to be scoped
 * to what changed since: the catalog, the default sequences and what the administration login
 * cannot grant as read then, and per login the catalog version its flags were computed on.
 */
export interface SyncedGrants {
  readonly catalog: Catalog;
  readonly defaults: ReadonlyMap<number, readonly number[]>;
  readonly ungrantable: Ungrantable;
  readonly logins: Map<string, { readonly version: number; readonly flags: Flags }>;
}

/** What a sync did: logins synced, GRANT/REVOKE statements applied, and (scoped) relations in scope. */
export interface SyncOutcome {
  logins: number;
  changes: number;
  scope?: number;
}

/**
 * The default sequences and what cannot be granted, of every relation or of `only` (the parser of
 * the server loaded): one message of three queries (grant-sync.ts readDefaultSequences,
 * readUngrantable), one round trip.
 */
export async function grantContext(
  c: pg.ClientBase,
  catalog: Catalog,
  only?: readonly number[],
): Promise<GrantContext> {
  // Grants ask the decision about analyzed statements: the server's parser must be loaded.
  await loadParser(majorOfServerVersion(catalog.serverVersionNum));
  const r = (await c.query(grantContextSql(only))) as unknown as pg.QueryResult[];
  if (!Array.isArray(r)) throw new Error('the grant context read returned no three results');
  return grantContextOf(r);
}

/** The default sequences and what cannot be granted ({@link grantContext}). */
export interface GrantContext {
  readonly defaults: Map<number, number[]>;
  readonly ungrantable: Ungrantable;
}

/** The three queries of {@link grantContext} (of every relation or of `only`), to send in a message that may hold others before them. */
export function grantContextSql(only?: readonly number[]): string {
  return `${defaultSequencesSql(only)};\n${ungrantableSql(only)}`;
}

/** The {@link GrantContext} from the three result sets of {@link grantContextSql} (the last three of `r`). */
export function grantContextOf(r: readonly pg.QueryResult[]): GrantContext {
  const [defaults, relations, schemas] = r.slice(-3);
  if (r.length < 3 || !defaults || !relations || !schemas)
    throw new Error('the grant context read returned no three results');
  return {
    defaults: defaultsFromRows(defaults.rows as DefaultsRow[]),
    ungrantable: ungrantableFromRows(
      relations.rows as UngrantableRow[],
      schemas.rows as { nspname: string }[],
      isUnmanagedSchema,
    ),
  };
}

/**
 * The privileges the set `roles` should hold on `relations` of `catalog` (all of them by default)
 * and what follows from `flags` (grant-plan.ts derivedGrants), less what the administration login
 * cannot grant (logged). Output: the keys, and the flags of `relations`.
 */
export function desiredGrants(
  run: GrantRun,
  roles: readonly string[],
  catalog: Catalog,
  ctx: { readonly defaults: ReadonlyMap<number, readonly number[]>; readonly ungrantable: Ungrantable },
  relations: Iterable<CatalogRelation> = catalog.relations.values(),
  others: Flags = new Map(),
): { keys: Set<PrivilegeKey>; flags: Flags } {
  const plan = planRelations(
    {
      config: run.config,
      roles,
      database: run.database,
      connection: run.connection,
      catalog,
      defaultSequences: ctx.defaults,
    },
    relations,
  );
  const flags: Flags = new Map(others);
  for (const [oid, f] of plan.flags) {
    const bits = (f.any ? 1 : 0) | (f.writes ? 2 : 0);
    if (bits === 0) flags.delete(oid);
    else flags.set(oid, bits);
  }
  const all = new Map([...flags].map(([oid, b]) => [oid, { any: (b & 1) !== 0, writes: (b & 2) !== 0 }]));
  for (const k of derivedGrants(all, catalog, ctx.defaults)) plan.keys.add(k);
  const { keep, dropped } = grantableOnly(plan.keys, ctx.ungrantable);
  if (dropped.length > 0)
    run.log.warn(
      { event: 'grant-not-grantable', database: run.database, roles, privileges: dropped.slice(0, 20) },
      'the administration login cannot grant these privileges: they stay ungranted',
    );
  return { keys: keep, flags };
}

/**
 * The queries the sync's transaction starts with, after the roles lock, in the same message: the
 * OIDs of the logins of `rows` that exist (pg_roles), and what `held` of them and the roles
 * `roleOids` hold (within `scope` when given).
 */
function loginsAndHeldSql(
  rows: readonly SetLoginRow[],
  held: readonly SetLoginRow[],
  roleOids: readonly number[],
  scope?: HeldScope,
): string {
  const logins = `ARRAY(SELECT oid FROM pg_roles WHERE rolname = ANY (${textArray(held.map((x) => x.login))}))`;
  return `SELECT rolname, oid::int8 AS oid FROM pg_roles WHERE rolname = ANY (${textArray(rows.map((x) => x.login))});
${heldPrivilegesSql(`${logins} || ${oidArray(roleOids)}`, scope)}`;
}

/** The login OIDs and what each role holds, from the result sets of {@link loginsAndHeldSql} (the message's last two). */
function loginsAndHeld(
  results: readonly pg.QueryResult[],
  roleOids: readonly number[],
): { oids: Map<string, number>; held: Map<number, HeldPrivileges> } {
  const [logins, held] = results.slice(-2);
  if (!logins || !held) throw new Error('the grant sync read no logins');
  const oids = new Map(
    (logins.rows as { rolname: string; oid: string }[]).map((x) => [x.rolname, Number(x.oid)]),
  );
  return { oids, held: heldFromRows(held.rows as HeldRow[], [...oids.values(), ...roleOids]) };
}

/**
 * Inside one transaction under the roles lock: every login of `rows` gets exactly what the
 * decision gives its set on `catalog`, and the workspace roles lose every privilege. Rejects with
 * the server's error after rolling back (the previous grants stand). Output: what it did, and the
 * {@link SyncedGrants} a later sync may be scoped from.
 */
export async function syncAllGrants(
  c: pg.ClientBase,
  run: GrantRun,
  rows: readonly SetLoginRow[],
  catalog: Catalog,
): Promise<{ outcome: SyncOutcome; synced: SyncedGrants }> {
  const ctx = await grantContext(c, catalog);
  const logins = new Map<string, { version: number; flags: Flags }>();
  const outcome: SyncOutcome = { logins: 0, changes: 0 };
  const roles = [...run.roleOids].map(
    ([r, oid]) => [managedRoleName(run.workspace || undefined, r), oid] as const,
  );
  const roleOids = roles.map(([, oid]) => oid);
  outcome.changes = await inTransaction(
    c,
    run,
    catalog,
    loginsAndHeldSql(rows, rows, roleOids),
    async (results) => {
      const { oids, held } = loginsAndHeld(results, roleOids);
      const changes: RoleGrants[] = [];
      for (const row of rows) {
        const oid = oids.get(row.login);
        if (oid === undefined) continue;
        const d = desiredGrants(run, row.roles, catalog, ctx);
        changes.push(change(row.login, held.get(oid), d.keys));
        logins.set(row.login, { version: catalog.version, flags: d.flags });
        outcome.logins++;
      }
      for (const [name, oid] of roles) changes.push(change(name, held.get(oid), new Set()));
      return changes;
    },
  );
  return { outcome, synced: { catalog, defaults: ctx.defaults, ungrantable: ctx.ungrantable, logins } };
}

/**
 * {@link syncAllGrants} limited to `scope` (grant-scope.ts: the relations whose grants the change
 * from `synced.catalog` to `catalog` can alter), the sequences their column defaults call (before
 * and after) and the schemas of all of those: only their privileges are read, planned and
 * changed; everything else stands as the last sync left it, which is what the policy gives it on
 * `catalog` too. A login whose flags were not computed on `synced.catalog` (made since, or by
 * another instance) is synced over the whole catalog. Rejects as syncAllGrants does.
 */
export async function syncScopedGrants(
  c: pg.ClientBase,
  run: GrantRun,
  rows: readonly SetLoginRow[],
  synced: SyncedGrants,
  catalog: Catalog,
  scope: ReadonlySet<number>,
  read?: GrantContext,
): Promise<{ outcome: SyncOutcome; synced: SyncedGrants }> {
  const before = relationsByOid(synced.catalog);
  const after = relationsByOid(catalog);
  // Sequences the defaults of tables in scope call, before and after: their USAGE may change.
  const ctx = read ?? (await grantContext(c, catalog, scopedTables(catalog, scope)));
  const relScope = new Set(scope);
  const defaults = new Map(synced.defaults);
  for (const oid of scope) {
    for (const s of defaults.get(oid) ?? []) relScope.add(s);
    defaults.delete(oid);
  }
  for (const [oid, seqs] of ctx.defaults) {
    defaults.set(oid, seqs);
    for (const s of seqs) relScope.add(s);
  }
  const schemas = new Set<string>();
  for (const oid of relScope) for (const r of [before.get(oid), after.get(oid)]) if (r) schemas.add(r.schema);
  const ungrantable = mergeUngrantable(synced.ungrantable, relScope, ctx.ungrantable);
  const within = (k: PrivilegeKey): boolean => {
    const [kind, id] = k.split('|');
    return kind === 'N' ? schemas.has(id ?? '') : relScope.has(Number(id));
  };
  const inScope = [...scope].flatMap((oid) => after.get(oid) ?? []);
  const heldScope: HeldScope = { relations: [...relScope], schemas: [...schemas] };
  const logins = new Map(synced.logins);
  const outcome: SyncOutcome = { logins: 0, changes: 0, scope: relScope.size };
  const roles = [...run.roleOids].map(
    ([r, oid]) => [managedRoleName(run.workspace || undefined, r), oid] as const,
  );
  const roleOids = roles.map(([, oid]) => oid);
  const scoped = rows.filter((r) => logins.get(r.login)?.version === synced.catalog.version);
  const whole = rows.filter((r) => !scoped.includes(r));
  // One round trip to start: BEGIN, the roles lock, the logins' OIDs and what the scoped ones and
  // the workspace roles hold within the scope.
  outcome.changes = await inTransaction(
    c,
    run,
    catalog,
    loginsAndHeldSql(rows, scoped, roleOids, heldScope),
    async (results) => {
      const { oids, held } = loginsAndHeld(results, roleOids);
      const changes: RoleGrants[] = [];
      for (const row of scoped) {
        const oid = oids.get(row.login);
        if (oid === undefined) continue;
        const others = new Map(logins.get(row.login)?.flags);
        for (const x of scope) others.delete(x);
        const d = desiredGrants(run, row.roles, catalog, { defaults, ungrantable }, inScope, others);
        const keys = new Set([...d.keys].filter(within));
        changes.push(change(row.login, held.get(oid), keys));
        logins.set(row.login, { version: catalog.version, flags: d.flags });
        outcome.logins++;
      }
      const wholeOids = whole.flatMap((r) => oids.get(r.login) ?? []);
      const all = wholeOids.length > 0 ? await readHeldPrivilegesOf(c, wholeOids) : new Map();
      for (const row of whole) {
        const oid = oids.get(row.login);
        if (oid === undefined) continue;
        const d = desiredGrants(run, row.roles, catalog, { defaults, ungrantable });
        changes.push(change(row.login, all.get(oid), d.keys));
        logins.set(row.login, { version: catalog.version, flags: d.flags });
        outcome.logins++;
      }
      for (const [name, oid] of roles) changes.push(change(name, held.get(oid), new Set()));
      return changes;
    },
  );
  return { outcome, synced: { catalog, defaults, ungrantable, logins } };
}

/** The relations of `scope` that `catalog` holds: what a scoped sync reads the {@link GrantContext} of. */
export function scopedTables(catalog: Catalog, scope: ReadonlySet<number>): number[] {
  const after = relationsByOid(catalog);
  return [...scope].filter((oid) => after.has(oid));
}

/** `base` with the relations of `scope` taken from `fresh` (read for those relations only). */
function mergeUngrantable(base: Ungrantable, scope: ReadonlySet<number>, fresh: Ungrantable): Ungrantable {
  const relations = new Map(base.relations);
  for (const oid of scope) relations.delete(oid);
  for (const [oid, r] of fresh.relations) relations.set(oid, r);
  return { relations, schemas: fresh.schemas };
}

/** What `role` gets: from `held` (nothing when undefined) to `desired`. */
function change(
  role: string,
  held: HeldPrivileges | undefined,
  desired: ReadonlySet<PrivilegeKey>,
): RoleGrants {
  return { role, held: held ?? { keys: new Set(), relations: new Map() }, desired };
}

/**
 * Runs `f` after BEGIN (with the roles lock), `first` sent in the message of BEGIN and its result
 * sets handed to `f`; the grant differences `f` returns are applied with COMMIT in one message
 * (grant-apply.ts applyGrantsAndCommit). ROLLBACK and rethrow when anything rejects. Output: how
 * many GRANT/REVOKE statements were applied.
 */
async function inTransaction(
  c: pg.ClientBase,
  run: GrantRun,
  catalog: Catalog,
  first: string,
  f: (results: pg.QueryResult[]) => Promise<readonly RoleGrants[]>,
): Promise<number> {
  let results: pg.QueryResult[];
  try {
    results = (await c.query(`BEGIN; ${ROLES_LOCK_SQL};\n${first}`)) as unknown as pg.QueryResult[];
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
  try {
    return await applyGrantsAndCommit(c, await f(results), catalog, run.log);
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}

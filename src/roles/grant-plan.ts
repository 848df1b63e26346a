// The privileges a role set's login should hold, computed by asking the decision of src/policy per relation and column.
import pg from 'pg';
import type { Catalog, CatalogRelation } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import { decide } from '../policy/decide.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import { analyze } from '../sql/analyze.js';
import { BOOKKEEPING_SCHEMA } from './bookkeeping.js';

/**
 * One privilege as a key: `T|<relation oid>|<privilege>` on a relation, `C|<relation oid>|<column>|<privilege>`
 * on a column, `N|<schema>|USAGE` on a schema. Sets of keys diff cheaply (grant-sync.ts).
 */
export type PrivilegeKey = string;

/** Relation-level privileges pgwarden manages (a sequence's USAGE included). */
export type TablePrivilege = 'DELETE' | 'USAGE';
/** Column-level privileges pgwarden manages. */
export type ColumnPrivilege = 'SELECT' | 'INSERT' | 'UPDATE';

/** The key of a relation-level privilege. */
export function tableKey(oid: number, privilege: string): PrivilegeKey {
  return `T|${oid}|${privilege}`;
}
/** The key of a column-level privilege. */
export function columnKey(oid: number, column: string, privilege: string): PrivilegeKey {
  return `C|${oid}|${column}|${privilege}`;
}
/** The key of USAGE on a schema. */
export function schemaKey(schema: string): PrivilegeKey {
  return `N|${schema}|USAGE`;
}

/** Schemas whose relations never get a grant: the system's, pgwarden's own (the passwords), temporary ones. */
export function isUnmanagedSchema(schema: string): boolean {
  return (
    schema === 'pg_catalog' ||
    schema === 'information_schema' ||
    schema === BOOKKEEPING_SCHEMA ||
    schema.startsWith('pg_')
  );
}

/**
 * The system columns of every relation but a view (PostgreSQL 15 docs 5.5 "System Columns"): they
 * carry no column value, and the analysis decides them like any column (`tableoid` of a table with
 * children is a compute use of its partition key).
 */
const SYSTEM_COLUMNS: readonly string[] = ['tableoid', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid'];

/** What {@link planGrants} needs. */
export interface GrantPlanInput {
  readonly config: Config;
  /** The role set (workspace role names, as the config names them). */
  readonly roles: readonly string[];
  /** The client-facing database name, as rules scope it. */
  readonly database: string;
  readonly connection: ConnectionKind;
  /** The catalog the grants are for (read with the database's url login). */
  readonly catalog: Catalog;
  /** For each table OID: the sequences its column defaults call (`nextval('…'::regclass)`). */
  readonly defaultSequences: ReadonlyMap<number, readonly number[]>;
}

/**
 * The decision for `sql` (one statement) and `roles`: undefined when refused, else the 0-based
 * result columns it masks. This is the only question grants ask (issue 17: "it must not decide
 * anything the decision does not").
 */
function decided(sql: string, input: GrantPlanInput): readonly number[] | undefined {
  const analysis = analyze(sql, { catalog: input.catalog, searchPath: input.catalog.defaultSearchPath });
  if (analysis.refusal || analysis.statements.length !== 1) return undefined;
  const d = decide(analysis, input.roles, {
    config: input.config,
    connection: input.connection,
    database: input.database,
    catalog: input.catalog,
  });
  const s = d.statements[0];
  return d.refusal === undefined && s?.verdict === 'allow' ? s.mask : undefined;
}

/**
 * The columns of `columns` the decision allows `statement` on, unmasked: one statement over all of
 * them first (the usual case: allowed, some masked), then one per column when that one is refused.
 */
function allowedColumns(
  columns: readonly string[],
  statement: (cols: readonly string[]) => string,
  input: GrantPlanInput,
): string[] {
  if (columns.length === 0) return [];
  const all = decided(statement(columns), input);
  if (all !== undefined) return columns.filter((_, i) => !all.includes(i));
  if (columns.length === 1) return [];
  return columns.filter((c) => decided(statement([c]), input)?.length === 0);
}

function qualified(rel: CatalogRelation): string {
  return `${pg.escapeIdentifier(rel.schema)}.${pg.escapeIdentifier(rel.name)}`;
}

/** What one relation contributes to a role set's privileges ({@link planRelation}). */
export interface RelationGrants {
  /** The column and relation-level keys on the relation itself. */
  readonly keys: ReadonlySet<PrivilegeKey>;
  /** Some privilege is granted on it: its schema gets USAGE. */
  readonly any: boolean;
  /** INSERT or UPDATE is granted on some column: the sequences its column defaults call get USAGE. */
  readonly writes: boolean;
}

/**
 * The privileges the login of `input.roles` should hold on one relation `rel` of `input.catalog`
 * (issue 17 "Grants derived from the rules"), each granted exactly when the decision allows the
 * plainest statement that needs it, unmasked (asked for all columns at once, then column by column
 * when refused):
 * - SELECT on column c: `SELECT c FROM t` (so never on a column without SEE: it is masked); on a
 *   system column (`ctid`, `tableoid`, …) of a relation some column of which is granted, the same;
 * - INSERT on c: `INSERT INTO t (c) VALUES (NULL)`; UPDATE on c: `UPDATE t SET c = NULL` (writes
 *   the decision refuses, such as into a hidden column under a unique constraint, get nothing);
 *   not on views (their rules are not written as views') nor materialized views;
 * - DELETE on t: `DELETE FROM t` (tables only).
 * Column privileges are always per column (never table-level): a column added upstream later is
 * unreadable until the next sync (fail closed). Undefined for a sequence and for a relation in a
 * system schema or in `pgwarden` (they get nothing of their own). Pure (needs the parser loaded).
 */
export function planRelation(rel: CatalogRelation, input: GrantPlanInput): RelationGrants | undefined {
  if (isUnmanagedSchema(rel.schema) || rel.kind === 'sequence') return undefined;
  const keys = new Set<PrivilegeKey>();
  const t = qualified(rel);
  const names = rel.columns.map((c) => c.name);
  const list = (cols: readonly string[]) => cols.map((c) => pg.escapeIdentifier(c)).join(', ');
  const selected = allowedColumns(names, (cols) => `SELECT ${list(cols)} FROM ${t}`, input);
  // System columns are columns to PostgreSQL's privileges too (pg_attribute rows with attnum < 0):
  // a login holding SELECT on some columns only may read `ctid` or `tableoid` just when granted them.
  if (selected.length > 0 && rel.kind !== 'view')
    selected.push(...allowedColumns(SYSTEM_COLUMNS, (cols) => `SELECT ${cols.join(', ')} FROM ${t}`, input));
  const granted: [ColumnPrivilege, string[]][] = [['SELECT', selected]];
  if (rel.kind !== 'matview' && rel.kind !== 'view') {
    granted.push([
      'INSERT',
      allowedColumns(
        names,
        (cols) => `INSERT INTO ${t} (${list(cols)}) VALUES (${cols.map(() => 'NULL').join(', ')})`,
        input,
      ),
    ]);
    granted.push([
      'UPDATE',
      allowedColumns(
        names,
        (cols) => `UPDATE ${t} SET ${cols.map((c) => `${pg.escapeIdentifier(c)} = NULL`).join(', ')}`,
        input,
      ),
    ]);
  }
  let any = false;
  let writes = false;
  for (const [priv, cols] of granted) {
    for (const c of cols) keys.add(columnKey(rel.oid, c, priv));
    if (cols.length > 0) {
      any = true;
      if (priv !== 'SELECT') writes = true;
    }
  }
  if (rel.kind !== 'matview' && rel.kind !== 'view' && decided(`DELETE FROM ${t}`, input)?.length === 0) {
    keys.add(tableKey(rel.oid, 'DELETE'));
    any = true;
  }
  return { keys, any, writes };
}

/**
 * The privileges on schemas and sequences that follow from what each relation gets (`flags`, by
 * relation OID: {@link RelationGrants}' `any` and `writes`): USAGE on a sequence a column default
 * of a table with `writes` calls (`defaultSequences`), and USAGE on every schema holding a
 * relation with `any` or such a sequence. Sequences and schemas unknown to `catalog` or in system
 * schemas get nothing. Output: schema and sequence keys. Pure.
 */
export function derivedGrants(
  flags: ReadonlyMap<number, { readonly any: boolean; readonly writes: boolean }>,
  catalog: Catalog,
  defaultSequences: ReadonlyMap<number, readonly number[]>,
): Set<PrivilegeKey> {
  const out = new Set<PrivilegeKey>();
  const byOid = relationsByOid(catalog);
  for (const [oid, f] of flags) {
    const rel = byOid.get(oid);
    if (!rel || (!f.any && !f.writes)) continue;
    if (f.any) out.add(schemaKey(rel.schema));
    if (!f.writes) continue;
    for (const seq of defaultSequences.get(oid) ?? []) {
      const s = byOid.get(seq);
      if (!s || isUnmanagedSchema(s.schema)) continue;
      out.add(tableKey(seq, 'USAGE'));
      out.add(schemaKey(s.schema));
    }
  }
  return out;
}

/** The relations of `catalog` by OID (built once per catalog value). */
export function relationsByOid(catalog: Catalog): ReadonlyMap<number, CatalogRelation> {
  let m = byOidMemo.get(catalog);
  if (!m) {
    m = new Map();
    for (const rel of catalog.relations.values()) m.set(rel.oid, rel);
    byOidMemo.set(catalog, m);
  }
  return m;
}
const byOidMemo = new WeakMap<Catalog, Map<number, CatalogRelation>>();

/**
 * Every privilege the login of `input.roles` should hold on `input.catalog`: what
 * {@link planRelation} gives each relation, plus {@link derivedGrants} (USAGE on the sequences of
 * column defaults of tables it may write, and on every schema holding a relation with a
 * privilege). Output: the set of {@link PrivilegeKey}s. Pure (needs the parser loaded).
 */
export function planGrants(input: GrantPlanInput): Set<PrivilegeKey> {
  const { keys, flags } = planRelations(input, input.catalog.relations.values());
  for (const k of derivedGrants(flags, input.catalog, input.defaultSequences)) keys.add(k);
  return keys;
}

/**
 * {@link planRelation} over `relations`: the union of their keys, and each relation's flags (by
 * OID; relations that get nothing of their own are left out). Pure (needs the parser loaded).
 */
export function planRelations(
  input: GrantPlanInput,
  relations: Iterable<CatalogRelation>,
): { keys: Set<PrivilegeKey>; flags: Map<number, { any: boolean; writes: boolean }> } {
  const keys = new Set<PrivilegeKey>();
  const flags = new Map<number, { any: boolean; writes: boolean }>();
  for (const rel of relations) {
    const g = planRelation(rel, input);
    if (!g) continue;
    for (const k of g.keys) keys.add(k);
    flags.set(rel.oid, { any: g.any, writes: g.writes });
  }
  return { keys, flags };
}

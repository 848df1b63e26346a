// The privileges a role set's login should hold, computed by asking the decision of src/policy per relation and column.
import crypto from 'node:crypto';
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

/**
 * The privileges the login of `input.roles` should hold on `input.catalog` (issue 17 "Grants
 * derived from the rules"), each granted exactly when the decision allows the plainest statement
 * that needs it, unmasked (asked for all columns at once, then column by column when refused):
 * - SELECT on column c: `SELECT c FROM t` (so never on a column without SEE: it is masked); on a
 *   system column (`ctid`, `tableoid`, …) of a relation some column of which is granted, the same;
 * - INSERT on c: `INSERT INTO t (c) VALUES (NULL)`; UPDATE on c: `UPDATE t SET c = NULL` (writes
 *   the decision refuses, such as into a hidden column under a unique constraint, get nothing);
 *   not on views (their rules are not written as views') nor materialized views;
 * - DELETE on t: `DELETE FROM t` (tables only);
 * - USAGE on a sequence a column default of t calls, when INSERT or UPDATE is granted on t;
 * - USAGE on every schema holding a relation with a privilege.
 * Column privileges are always per column (never table-level): a column added upstream later is
 * unreadable until the next sync (fail closed). Relations in system schemas and in `pgwarden`
 * get nothing. Output: the set of {@link PrivilegeKey}s. Pure (needs the parser loaded).
 */
export function planGrants(input: GrantPlanInput): Set<PrivilegeKey> {
  const out = new Set<PrivilegeKey>();
  const byOid = new Map<number, CatalogRelation>();
  for (const rel of input.catalog.relations.values()) byOid.set(rel.oid, rel);
  for (const rel of input.catalog.relations.values()) {
    if (isUnmanagedSchema(rel.schema) || rel.kind === 'sequence') continue;
    const t = qualified(rel);
    const names = rel.columns.map((c) => c.name);
    const list = (cols: readonly string[]) => cols.map((c) => pg.escapeIdentifier(c)).join(', ');
    const selected = allowedColumns(names, (cols) => `SELECT ${list(cols)} FROM ${t}`, input);
    // System columns are columns to PostgreSQL's privileges too (pg_attribute rows with attnum < 0):
    // a login holding SELECT on some columns only may read `ctid` or `tableoid` just when granted them.
    if (selected.length > 0 && rel.kind !== 'view')
      selected.push(
        ...allowedColumns(SYSTEM_COLUMNS, (cols) => `SELECT ${cols.join(', ')} FROM ${t}`, input),
      );
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
      for (const c of cols) out.add(columnKey(rel.oid, c, priv));
      if (cols.length > 0) {
        any = true;
        if (priv !== 'SELECT') writes = true;
      }
    }
    if (rel.kind !== 'matview' && rel.kind !== 'view' && decided(`DELETE FROM ${t}`, input)?.length === 0) {
      out.add(tableKey(rel.oid, 'DELETE'));
      any = true;
    }
    if (writes) {
      for (const seq of input.defaultSequences.get(rel.oid) ?? []) {
        const s = byOid.get(seq);
        if (!s || isUnmanagedSchema(s.schema)) continue;
        out.add(tableKey(seq, 'USAGE'));
        out.add(schemaKey(s.schema));
      }
    }
    if (any) out.add(schemaKey(rel.schema));
  }
  return out;
}

/**
 * A digest of what grants are computed from in `catalog`: every relation's OID, names, kind, view
 * definition, columns (name, attnum, type, generated-from, unique) and constraints. Two catalogs
 * with the same digest give the same plans for the same policy, so a catalog read again after an
 * unknown name (most often unchanged) needs no sync. Output: hex SHA-256.
 */
export function catalogDigest(catalog: Catalog): string {
  const h = crypto.createHash('sha256');
  const rels = [...catalog.relations.values()].sort((a, b) => a.oid - b.oid);
  for (const r of rels) {
    if (r.schema === 'pg_catalog' || r.schema === 'information_schema') continue;
    h.update(
      JSON.stringify([
        r.oid,
        r.schema,
        r.name,
        r.kind,
        r.viewDefinition,
        r.columns.map((c) => [c.name, c.attnum, c.typeOid, c.generatedFrom, c.unique]),
        r.constraints ?? null,
      ]),
    );
  }
  return h.digest('hex');
}

// list_tables and describe_table: the proxy's shared catalog, judged by the policy's own decide(); keys read through the proxy as the key.
import type pg from 'pg';
import { type Catalog, type CatalogRelation, catalogKey, type RelationKind } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import { decide } from '../policy/decide.js';
import { checkAction } from '../policy/rule-match.js';
import { CatalogUnavailable } from '../proxy/catalog-source.js';
import { analyze, loadParser } from '../sql/analyze.js';
import { PGWARDEN_SCHEMA } from '../sql/catalog-allowlist.js';
import { majorOfServerVersion } from '../sql/parser.js';
import type { McpIdentity } from './api-key-auth.js';
import type { PoolEntry } from './proxy-pools.js';
import { ToolFailure } from './tool-errors.js';

/** Schemas that are not the caller's data: the system catalog, TOAST and temporary schemas. */
function isSystemSchema(schema: string): boolean {
  return (
    schema === 'pg_catalog' ||
    schema === 'information_schema' ||
    schema.startsWith('pg_toast') ||
    schema.startsWith('pg_temp_')
  );
}

/** One relation the key may SELECT. */
export interface TableEntry {
  readonly schema: string;
  readonly name: string;
  readonly kind: RelationKind;
}

/** One column as describe_table reports it. */
export interface ColumnEntry {
  readonly name: string;
  /** format_type of the column, e.g. `numeric(10,2)`. */
  readonly type: string;
  readonly nullable: boolean;
  readonly primary_key: boolean;
  /** True when its values come back as `*****` for this key (no SEE). */
  readonly masked: boolean;
  /** False when a statement selecting this column is refused for this key. */
  readonly selectable: boolean;
  /** Why it is masked or not selectable: the decision's own words. */
  readonly note?: string;
}

/** A foreign key of the described table. */
export interface ForeignKeyEntry {
  readonly name: string;
  readonly columns: readonly string[];
  readonly references: {
    readonly schema: string;
    readonly table: string;
    readonly columns: readonly string[];
  };
}

/** describe_table's result. */
export interface TableDescription {
  readonly database: string;
  readonly schema: string;
  readonly table: string;
  readonly kind: RelationKind;
  readonly columns: readonly ColumnEntry[];
  readonly primary_key: readonly string[];
  readonly unique: readonly { readonly name: string; readonly columns: readonly string[] }[];
  readonly foreign_keys: readonly ForeignKeyEntry[];
}

function quoteIdent(s: string): string {
  return `"${s.replaceAll('"', '""')}"`;
}

/**
 * Where the tools get a catalog: the proxy's shared one (ProxyServer.catalog), `refresh` asking for a
 * fresh read as a statement naming an unknown relation does.
 */
export type CatalogSourceFn = (database: string, refresh?: boolean) => Promise<Catalog>;

/**
 * The catalog list_tables and describe_table read: the proxy's shared catalog of `database`, the one
 * the key's own statements are analyzed under (same relations, columns, default search_path and
 * version), read on the proxy's catalog connection once per version — not re-read per call (issue
 * 18). What it holds is what any login reads from the system catalog (pg_class, pg_attribute: no
 * privilege filters them); what a key may see of it is decided per call by listTables and
 * columnVisibility, and describeTable's read through the proxy. Loads the parser of the server's
 * major. Rejects with ToolFailure 57P03/58000 when the catalog cannot be read now.
 */
export async function sharedCatalog(
  source: CatalogSourceFn,
  database: string,
  refresh = false,
): Promise<Catalog> {
  let catalog: Catalog;
  try {
    catalog = await source(database, refresh);
  } catch (e) {
    if (e instanceof CatalogUnavailable) throw new ToolFailure(e.sqlstate, e.message);
    throw e;
  }
  await loadParser(majorOfServerVersion(catalog.serverVersionNum));
  return catalog;
}

/**
 * list_tables: the relations of `catalog` outside the system schemas (tables, partitioned tables,
 * views, materialized views, foreign tables) that `identity`'s roles may SELECT — `checkAction`, the
 * rule match the decision's requirement check uses (seed 004: deny first, then allow, default deny;
 * an allow on some columns of a table covers the table). pgwarden's own schema (the policy store,
 * the set logins' passwords) is listed only to a key holding MANAGE on the database, which reading
 * it needs whatever the table rules say. Optionally one `schema` only. Sorted by schema, then name.
 * Pure.
 */
export function listTables(
  config: Config,
  identity: McpIdentity,
  database: string,
  catalog: Catalog,
  schema?: string,
): TableEntry[] {
  const out: TableEntry[] = [];
  const manages = checkAction(config, identity.roles, 'MANAGE', database, { level: 'database' }).granted;
  for (const rel of catalog.relations.values()) {
    if (isSystemSchema(rel.schema) || rel.kind === 'sequence') continue;
    if (rel.schema === PGWARDEN_SCHEMA && !manages) continue;
    if (schema !== undefined && rel.schema !== schema) continue;
    const select = checkAction(config, identity.roles, 'SELECT', database, {
      level: 'table',
      schema: rel.schema,
      table: rel.name,
    });
    if (select.granted) out.push({ schema: rel.schema, name: rel.name, kind: rel.kind });
  }
  return out.sort((a, b) => a.schema.localeCompare(b.schema) || a.name.localeCompare(b.name));
}

/** The relation {@link findRelation} finds, or undefined (a sequence is not one). Pure. */
export function relationNamed(catalog: Catalog, table: string, schema?: string): CatalogRelation | undefined {
  const schemas = schema !== undefined ? [schema] : catalog.defaultSearchPath;
  for (const s of schemas) {
    const rel = catalog.relations.get(catalogKey(s, table));
    if (rel && rel.kind !== 'sequence') return rel;
  }
  return undefined;
}

/**
 * Finds `table` in `schema`, or (no schema given) in the first schema of the upstream login's
 * default search_path that has it, as an unqualified name would resolve. Throws ToolFailure 42P01
 * (undefined_table) when there is none.
 */
export function findRelation(catalog: Catalog, table: string, schema?: string): CatalogRelation {
  const rel = relationNamed(catalog, table, schema);
  if (rel) return rel;
  const shown = schema !== undefined ? `${schema}.${table}` : table;
  throw new ToolFailure('42P01', `relation "${shown}" does not exist`);
}

/**
 * Whether each column of `rel` comes back masked, or is refused, for `identity`: for each column
 * the decision itself — `decide()` on `analyze('SELECT "<column>" FROM "<schema>"."<table>"')`, over
 * the shared catalog the proxy's session analyzes under — exactly what the proxy's session computes for that statement
 * (SEE rules, generated columns over hidden ones, columns a view passes up from a hidden base column).
 * Pure given the catalog; the parser must be loaded ({@link sharedCatalog} does).
 */
export function columnVisibility(
  config: Config,
  identity: McpIdentity,
  database: string,
  catalog: Catalog,
  rel: CatalogRelation,
): Map<string, { masked: boolean; selectable: boolean; note?: string }> {
  const out = new Map<string, { masked: boolean; selectable: boolean; note?: string }>();
  const from = `${quoteIdent(rel.schema)}.${quoteIdent(rel.name)}`;
  for (const col of rel.columns) {
    const analysis = analyze(`SELECT ${quoteIdent(col.name)} FROM ${from}`, {
      catalog,
      searchPath: catalog.defaultSearchPath,
    });
    const decision = decide(analysis, identity.roles, { config, connection: 'mcp', database, catalog });
    const first = decision.statements[0];
    if (decision.refusal || first?.verdict !== 'allow') {
      out.set(col.name, { masked: false, selectable: false, note: decision.refusal?.message ?? 'refused' });
    } else if (first.mask.includes(0)) {
      out.set(col.name, { masked: true, selectable: true, note: 'no SEE: values come back as *****' });
    } else {
      out.set(col.name, { masked: false, selectable: true });
    }
  }
  return out;
}

interface ConstraintRow {
  name: string;
  contype: string;
  cols: string[];
  ref_schema: string | null;
  ref_table: string | null;
  ref_cols: string[];
}

/** Keys of one relation (by OID): PRIMARY KEY, UNIQUE and FOREIGN KEY constraints, columns in key order. */
const CONSTRAINTS_SQL = `
SELECT c.conname::text AS name, c.contype::text AS contype,
       ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY AS k(n, o)
               JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o) AS cols,
       fn.nspname::text AS ref_schema, fc.relname::text AS ref_table,
       ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(n, o)
               JOIN pg_catalog.pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o) AS ref_cols
  FROM pg_catalog.pg_constraint c
  LEFT JOIN pg_catalog.pg_class fc ON fc.oid = c.confrelid
  LEFT JOIN pg_catalog.pg_namespace fn ON fn.oid = fc.relnamespace
 WHERE c.conrelid = $1::oid AND c.contype IN ('p', 'u', 'f')
 ORDER BY c.contype, c.conname`;

/**
 * What describe_table found through a pool's sessions, per relation OID: its keys (CONSTRAINTS_SQL
 * rows, read through the proxy as the key) and its description, for one version of the shared
 * catalog and one config (the description is a function of the catalog, the config, the key's roles
 * and the keys read). Found again once the catalog's version moves (DDL through pgwarden, the TTL),
 * as the proxy reads its catalog again, or the config changes. Per pool, so per key (a reload also
 * closes the pools).
 */
const described = new WeakMap<
  PoolEntry,
  {
    readonly version: number;
    readonly config: Config;
    readonly roles: string;
    readonly byOid: Map<number, TableDescription>;
  }
>();

function describedFor(entry: PoolEntry, catalog: Catalog, config: Config, identity: McpIdentity) {
  const roles = identity.roles.join('\u0000');
  let d = described.get(entry);
  if (d?.version !== catalog.version || d.config !== config || d.roles !== roles) {
    d = { version: catalog.version, config, roles, byOid: new Map() };
    described.set(entry, d);
  }
  return d.byOid;
}

/**
 * describe_table: first `SELECT FROM <table> LIMIT 0` through the proxy on every call — a table the
 * key may not SELECT is refused there, with the proxy's own message (42501) — then the relation's
 * keys (pg_constraint, read through the proxy as the key) and each column's masking from
 * {@link columnVisibility}, both found once per pool, catalog version and config (see `described`).
 * `catalog` is the shared one ({@link sharedCatalog}).
 * Rejects with the proxy's error, or ToolFailure 42P01 for an unknown relation.
 */
export async function describeTable(
  client: pg.ClientBase,
  entry: PoolEntry,
  config: Config,
  identity: McpIdentity,
  database: string,
  catalog: Catalog,
  table: string,
  schema?: string,
): Promise<TableDescription> {
  const rel = findRelation(catalog, table, schema);
  // Every call: the key's own statement, decided (and audited) by the proxy.
  await client.query(`SELECT FROM ${quoteIdent(rel.schema)}.${quoteIdent(rel.name)} LIMIT 0`);
  const known = describedFor(entry, catalog, config, identity);
  const hit = known.get(rel.oid);
  if (hit) return hit;
  const constraints = (await client.query<ConstraintRow>(CONSTRAINTS_SQL, [rel.oid])).rows;
  const primary = constraints.find((c) => c.contype === 'p')?.cols ?? [];
  const visibility = columnVisibility(config, identity, database, catalog, rel);
  const description: TableDescription = {
    database,
    schema: rel.schema,
    table: rel.name,
    kind: rel.kind,
    columns: rel.columns.map((c) => {
      const v = visibility.get(c.name) ?? { masked: false, selectable: false };
      return {
        name: c.name,
        type: c.typeName,
        nullable: !c.notNull,
        primary_key: primary.includes(c.name),
        masked: v.masked,
        selectable: v.selectable,
        ...(v.note !== undefined ? { note: v.note } : {}),
      };
    }),
    primary_key: primary,
    unique: constraints.filter((c) => c.contype === 'u').map((c) => ({ name: c.name, columns: c.cols })),
    foreign_keys: constraints
      .filter((c) => c.contype === 'f')
      .map((c) => ({
        name: c.name,
        columns: c.cols,
        references: { schema: c.ref_schema ?? '', table: c.ref_table ?? '', columns: c.ref_cols },
      })),
  };
  known.set(rel.oid, description);
  return description;
}

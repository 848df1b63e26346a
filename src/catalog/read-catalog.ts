// Reads one upstream database's Catalog (namespaces, relations, columns, views, functions, search_path) in one round trip.
import type pg from 'pg';
import type {
  Catalog,
  CatalogColumn,
  CatalogFunction,
  CatalogRelation,
  CatalogType,
  RelationKind,
} from './types.js';
import { catalogKey } from './types.js';

/** pg_class.relkind → RelationKind, for the kinds the Catalog holds (PostgreSQL 15 docs, 53.11 pg_class). */
const RELKINDS: Readonly<Record<string, RelationKind>> = {
  r: 'table',
  p: 'partitioned',
  v: 'view',
  m: 'matview',
  f: 'foreign',
  S: 'sequence',
};

/** pg_proc.provolatile (53.39 pg_proc). */
const VOLATILITY: Readonly<Record<string, CatalogFunction['volatility']>> = {
  i: 'immutable',
  s: 'stable',
  v: 'volatile',
};

/** pg_proc.prokind (53.39 pg_proc). */
const PROKINDS: Readonly<Record<string, CatalogFunction['kind']>> = {
  f: 'function',
  a: 'aggregate',
  w: 'window',
  p: 'procedure',
};

// The whole read is one simple-query message: one round trip, and one REPEATABLE READ snapshot so
// that relations, columns and functions describe the same moment even under concurrent DDL.
// `current_schemas(false)` is taken before the path is narrowed: it is the login's own path with
// "$user" expanded and schemas that are missing or lack USAGE dropped (9.26 System Information
// Functions). Then `SET LOCAL search_path = pg_catalog` (undone by COMMIT), as pg_dump does, so
// pg_get_viewdef / pg_get_expr / format_type schema-qualify every object outside pg_catalog and
// the definitions read the same whatever path the analysis later runs under.
/** The reads themselves, without the transaction around them: one result set each, SET LOCAL included. */
export const CATALOG_READS = `
SELECT current_setting('server_version_num')::int AS version, current_schemas(false)::text[] AS path,
       coalesce(nullif(pg_my_temp_schema(), 0)::regnamespace::text, '') AS temp, current_user::text AS login;
SET LOCAL search_path = pg_catalog;
SELECT nspname FROM pg_namespace;
SELECT c.oid, n.nspname, c.relname, c.relkind::text AS relkind,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END AS def
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S');
WITH uniq AS (
  -- Key columns of unique and exclusion indexes (every UNIQUE, PRIMARY KEY and EXCLUDE constraint
  -- has one); INCLUDE columns (position > indnkeyatts) do not take part in the uniqueness check.
  SELECT i.indrelid AS rel, k.attnum::int AS attnum
    FROM pg_index i, unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
   WHERE (i.indisunique OR i.indisexclusion) AND k.ord <= i.indnkeyatts AND k.attnum > 0
  UNION
  -- Columns read by an index expression or a partial-index predicate: a write to them can also
  -- end in 23505/23P01. Read conservatively from the node tree: every Var's varattno (all Vars of
  -- an index expression are the indexed table's; 0 is a whole-row reference = every column).
  SELECT i.indrelid, m[1]::int
    FROM pg_index i, regexp_matches(concat(i.indexprs::text, ' ', i.indpred::text), ':varattno (\\d+)', 'g') AS m
   WHERE (i.indisunique OR i.indisexclusion) AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)
), uniq_by_rel AS (
  SELECT rel, array_agg(attnum) AS atts FROM uniq GROUP BY rel
), gen_from AS (
  -- A generated column's pg_attrdef row depends (pg_depend, refobjsubid = attnum) on every column
  -- its expression reads, and on the generated column itself, which is left out.
  SELECT d.adrelid AS rel, d.adnum AS attnum, array_agg(ra.attname::text ORDER BY ra.attnum) AS cols
    FROM pg_attrdef d
    JOIN pg_depend dep ON dep.classid = 'pg_attrdef'::regclass AND dep.objid = d.oid
     AND dep.refclassid = 'pg_class'::regclass AND dep.refobjid = d.adrelid
     AND dep.refobjsubid > 0 AND dep.refobjsubid <> d.adnum
    JOIN pg_attribute ra ON ra.attrelid = d.adrelid AND ra.attnum = dep.refobjsubid
   GROUP BY d.adrelid, d.adnum
)
SELECT a.attrelid AS rel, a.attname, a.attnum, a.atttypid, format_type(a.atttypid, a.atttypmod) AS typname,
       a.attnotnull,
       CASE WHEN a.attgenerated <> '' THEN pg_get_expr(d.adbin, d.adrelid) END AS gen,
       CASE WHEN a.attgenerated <> '' THEN coalesce(g.cols, '{}') END AS genfrom,
       coalesce(a.attnum = ANY (u.atts) OR 0 = ANY (u.atts), false) AS uniq
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
  LEFT JOIN pg_attrdef d ON a.attgenerated <> '' AND d.adrelid = a.attrelid AND d.adnum = a.attnum
  LEFT JOIN gen_from g ON a.attgenerated <> '' AND g.rel = a.attrelid AND g.attnum = a.attnum
  LEFT JOIN uniq_by_rel u ON u.rel = a.attrelid
 WHERE a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attrelid, a.attnum;
SELECT i.indrelid AS rel, CASE WHEN i.indisexclusion THEN 'exclusion' ELSE 'unique' END AS kind,
       ic.relname AS name,
       ARRAY(SELECT DISTINCT a FROM (
         SELECT k.attnum::int AS a FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
          WHERE k.ord <= i.indnkeyatts AND k.attnum > 0
         UNION ALL
         SELECT m[1]::int FROM regexp_matches(concat(i.indexprs::text, ' ', i.indpred::text), ':varattno (\\d+)', 'g') AS m
       ) x WHERE a >= 0) AS atts,
       NULL::text AS ref_schema, NULL::text AS ref_table, NULL::text[] AS ref_cols
  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE i.indisunique OR i.indisexclusion
UNION ALL
SELECT c.conrelid, CASE c.contype WHEN 'c' THEN 'check' ELSE 'foreign' END, c.conname, c.conkey::int[],
       rn.nspname::text, rc.relname::text,
       ARRAY(SELECT ra.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.attnum ORDER BY k.ord)
  FROM pg_constraint c
  LEFT JOIN pg_class rc ON rc.oid = c.confrelid LEFT JOIN pg_namespace rn ON rn.oid = rc.relnamespace
 WHERE c.contype IN ('c', 'f') AND c.conrelid <> 0;
WITH RECURSIVE edges(child, parent) AS (
  -- What a type is built on: an array on its element, a domain on its base type, a range on its
  -- subtype and a multirange on its range, a composite type (row types of tables included) on each
  -- attribute's type.
  SELECT t.typelem, t.oid FROM pg_type t WHERE t.typcategory = 'A' AND t.typelem <> 0
  UNION ALL SELECT t.typbasetype, t.oid FROM pg_type t WHERE t.typtype = 'd'
  UNION ALL SELECT r.rngsubtype, r.rngtypid FROM pg_range r
  UNION ALL SELECT r.rngtypid, r.rngmultitypid FROM pg_range r
  UNION ALL SELECT a.atttypid, t.oid FROM pg_type t
    JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE t.typtype = 'c'
), uc(oid, why) AS (
  -- Types whose input runs user code: domains outside the system schemas (their CHECKs may call
  -- any function), targets of user-defined cast functions, and every type built on one.
  SELECT t.oid, 'domain'::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
   WHERE t.typtype = 'd' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  UNION
  SELECT c.casttarget, 'user cast' FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc
    JOIN pg_namespace pn ON pn.oid = p.pronamespace WHERE pn.nspname <> 'pg_catalog'
  UNION
  SELECT e.parent, 'built on a type with user code' FROM uc u JOIN edges e ON e.child = u.oid
)
SELECT t.oid, n.nspname, t.typname, (SELECT min(u.why) FROM uc u WHERE u.oid = t.oid) AS why
  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
 WHERE n.nspname <> 'pg_toast';
SELECT p.oid, n.nspname, p.proname, p.proargtypes::text AS args, p.prorettype, p.proretset,
       p.provolatile::text AS provolatile, p.prokind::text AS prokind,
       -- The result columns in FROM: OUT/INOUT/TABLE parameters (unnamed ones columnN), else the
       -- attributes of a composite return type (build_function_result_tupdesc_t, 53.39 pg_proc).
       CASE WHEN p.proargmodes IS NOT NULL AND p.proargmodes && '{o,b,t}'::"char"[] THEN
         ARRAY(SELECT coalesce(nullif(p.proargnames[a.i], ''), 'column' || row_number() OVER (ORDER BY a.i))
                 FROM generate_subscripts(p.proargmodes, 1) AS a(i)
                WHERE p.proargmodes[a.i] IN ('o', 'b', 't') ORDER BY a.i)
       WHEN rt.typtype = 'c' THEN
         ARRAY(SELECT ra.attname::text FROM pg_attribute ra
                WHERE ra.attrelid = rt.typrelid AND ra.attnum > 0 AND NOT ra.attisdropped ORDER BY ra.attnum)
       END AS outnames,
       CASE WHEN p.proargmodes IS NOT NULL AND p.proargmodes && '{o,b,t}'::"char"[] THEN
         ARRAY(SELECT p.proallargtypes[a.i]::int FROM generate_subscripts(p.proargmodes, 1) AS a(i)
                WHERE p.proargmodes[a.i] IN ('o', 'b', 't') ORDER BY a.i)
       WHEN rt.typtype = 'c' THEN
         ARRAY(SELECT ra.atttypid::int FROM pg_attribute ra
                WHERE ra.attrelid = rt.typrelid AND ra.attnum > 0 AND NOT ra.attisdropped ORDER BY ra.attnum)
       END AS outtypes,
       p.proargmodes IS NOT NULL AND p.proargmodes && '{o,b,t}'::"char"[] AS outparams
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
  LEFT JOIN pg_type rt ON rt.oid = p.prorettype;
`;

const READ_SQL = `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;${CATALOG_READS}COMMIT;`;

interface HeadRow {
  version: number;
  path: string[];
  temp: string;
  login: string;
}
interface NamespaceRow {
  nspname: string;
}
interface RelationRow {
  oid: number;
  nspname: string;
  relname: string;
  relkind: string;
  def: string | null;
}
interface ColumnRow {
  rel: number;
  attname: string;
  attnum: number;
  atttypid: number;
  typname: string;
  attnotnull: boolean;
  gen: string | null;
  genfrom: string[] | null;
  uniq: boolean;
}
interface ConstraintRow {
  rel: number;
  kind: 'unique' | 'exclusion' | 'check' | 'foreign';
  name: string;
  atts: number[] | null;
  ref_schema: string | null;
  ref_table: string | null;
  ref_cols: string[] | null;
}
interface UserTypeRow {
  oid: number;
  nspname: string;
  typname: string;
  why: string | null;
}
interface FunctionRow {
  oid: number;
  nspname: string;
  proname: string;
  args: string;
  prorettype: number;
  proretset: boolean;
  provolatile: string;
  prokind: string;
  outnames: string[] | null;
  outtypes: number[] | null;
  outparams: boolean;
}

/** Indexes of CATALOG_READS's result sets (SET LOCAL also produces one). */
const RESULT = {
  head: 0,
  namespaces: 2,
  relations: 3,
  columns: 4,
  constraints: 5,
  userTypes: 6,
  functions: 7,
  count: 8,
} as const;

/** The rows of one result set of CATALOG_READS, values already parsed (pg's type parsers). */
export interface ResultRows {
  readonly rows: readonly unknown[];
}

/**
 * Reads the Catalog of the database `client` is connected to, as the login it is connected as.
 *
 * Input: a connected `pg` client that is not inside a transaction block (a dedicated catalog
 * connection: the read runs its own `BEGIN … COMMIT`, which would otherwise commit the caller's
 * transaction), and the `version` to stamp on the result (monotonic per database, see
 * catalog-cache.ts). Output: a Catalog with
 * - `serverVersionNum` (`server_version_num`), `defaultSearchPath` (`current_schemas(false)` of
 *   this session, which must not have run `SET search_path`);
 * - every namespace (pg_catalog, information_schema, pg_toast and temp schemas included);
 * - every relation of kind r, p, v, m, f, S, with its OID, its columns in attnum order without
 *   dropped ones (type OID, `format_type`, NOT NULL, generation expression and the columns it
 *   reads from pg_depend, `unique` as described in READ_SQL), and `pg_get_viewdef` for views and
 *   materialized views;
 * - every pg_proc row, grouped by `schema.name` (overloads in one list).
 * View definitions and generation expressions are printed under `search_path = pg_catalog`: every
 * relation, function, type and operator outside pg_catalog is schema-qualified, so they must be
 * parsed with an empty search_path (pg_catalog only), never with a session's path.
 *
 * Runs in one round trip (one simple-query message: BEGIN, five reads, COMMIT) under one
 * REPEATABLE READ, READ ONLY snapshot; ~40 ms on the demo database (211 relations, 3244
 * functions), of which ~16 ms is pg_get_viewdef over the system views.
 * Rejects with the server's error as pg raises it (DatabaseError, SQLSTATE in `code`: e.g.
 * `57014` query_canceled under statement_timeout, `40001` serialization_failure on a hot standby
 * in conflict), or with the connection's error, after a best-effort ROLLBACK that leaves
 * the session idle; rejects with a plain Error if the server returns an unexpected number of
 * result sets.
 * Sources: PostgreSQL 15 docs ch. 53 System Catalogs (pg_namespace, pg_class, pg_attribute,
 * pg_attrdef, pg_index, pg_depend, pg_proc), 9.26 System Information Functions (format_type,
 * pg_get_viewdef, pg_get_expr, current_schemas).
 */
export async function readCatalog(client: pg.ClientBase, version: number): Promise<Catalog> {
  let results: pg.QueryResult[];
  try {
    results = (await client.query(READ_SQL)) as unknown as pg.QueryResult[];
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  // BEGIN and COMMIT produce a result set each around the reads.
  if (!Array.isArray(results) || results.length !== RESULT.count + 2) {
    throw new Error(`catalog read returned ${Array.isArray(results) ? results.length : 1} results`);
  }
  return buildCatalog(results.slice(1, -1), version);
}

/**
 * Builds the Catalog from the result sets of {@link CATALOG_READS} (in order, SET LOCAL's empty
 * one included), however they were read: by {@link readCatalog} on a catalog connection, or
 * in-band on a client's own upstream session (the proxy does that inside a transaction, where
 * uncommitted DDL and temporary tables are visible to that session only). `tempSchema` is the
 * reading session's own temporary schema (`pg_temp_N`), empty when it has none.
 * Throws an Error when the result sets are not the expected ones.
 */
export function buildCatalog(
  results: readonly ResultRows[],
  version: number,
): Catalog & { readonly tempSchema: string } {
  if (results.length !== RESULT.count) throw new Error(`catalog read returned ${results.length} results`);
  const rows = <T>(i: number): T[] => results[i]!.rows as T[];

  const head = rows<HeadRow>(RESULT.head)[0];
  if (!head) throw new Error('catalog read returned no server version');
  const namespaces = new Set(rows<NamespaceRow>(RESULT.namespaces).map((r) => r.nspname));

  const columnsByRel = new Map<number, CatalogColumn[]>();
  for (const r of rows<ColumnRow>(RESULT.columns)) {
    let list = columnsByRel.get(r.rel);
    if (!list) {
      list = [];
      columnsByRel.set(r.rel, list);
    }
    list.push(
      Object.freeze({
        name: r.attname,
        attnum: r.attnum,
        typeOid: r.atttypid,
        typeName: r.typname,
        notNull: r.attnotnull,
        generated: r.gen,
        generatedFrom: Object.freeze(r.genfrom ?? []),
        unique: r.uniq,
      }),
    );
  }

  const constraintsByRel = new Map<number, ConstraintRow[]>();
  for (const r of rows<ConstraintRow>(RESULT.constraints)) {
    const list = constraintsByRel.get(r.rel) ?? [];
    list.push(r);
    constraintsByRel.set(r.rel, list);
  }

  const relations = new Map<string, CatalogRelation>();
  for (const r of rows<RelationRow>(RESULT.relations)) {
    const kind = RELKINDS[r.relkind];
    if (!kind) continue;
    relations.set(
      catalogKey(r.nspname, r.relname),
      Object.freeze({
        oid: r.oid,
        schema: r.nspname,
        name: r.relname,
        kind,
        columns: Object.freeze(columnsByRel.get(r.oid) ?? []),
        constraints: Object.freeze(
          (constraintsByRel.get(r.oid) ?? []).map((c) => {
            const cols = columnsByRel.get(r.oid) ?? [];
            // A whole-row reference (attnum 0) in an index expression reads every column.
            const names = (c.atts ?? []).includes(0)
              ? cols.map((x) => x.name)
              : (c.atts ?? [])
                  .map((a) => cols.find((x) => x.attnum === a)?.name)
                  .filter((x): x is string => !!x);
            return Object.freeze({
              kind: c.kind,
              name: c.name,
              columns: Object.freeze(names),
              ...(c.kind === 'foreign' && c.ref_schema && c.ref_table
                ? {
                    references: Object.freeze({
                      schema: c.ref_schema,
                      table: c.ref_table,
                      columns: Object.freeze(c.ref_cols ?? []),
                    }),
                  }
                : {}),
            });
          }),
        ),
        viewDefinition: r.def,
      }),
    );
  }

  const types = new Map<string, CatalogType>();
  const userCodeTypeOids = new Set<number>();
  for (const r of rows<UserTypeRow>(RESULT.userTypes)) {
    const t = Object.freeze({ oid: r.oid, schema: r.nspname, name: r.typname, why: r.why });
    types.set(catalogKey(r.nspname, r.typname), t);
    if (r.why !== null) userCodeTypeOids.add(r.oid);
  }

  const functions = new Map<string, CatalogFunction[]>();
  for (const r of rows<FunctionRow>(RESULT.functions)) {
    const key = catalogKey(r.nspname, r.proname);
    let list = functions.get(key);
    if (!list) {
      list = [];
      functions.set(key, list);
    }
    list.push(
      Object.freeze({
        oid: r.oid,
        schema: r.nspname,
        name: r.proname,
        // oidvector prints as space-separated decimal OIDs, empty for no arguments.
        argTypes: Object.freeze(r.args === '' ? [] : r.args.split(' ').map(Number)),
        returnType: r.prorettype,
        returnsSet: r.proretset,
        volatility: VOLATILITY[r.provolatile] ?? 'volatile',
        kind: PROKINDS[r.prokind] ?? 'function',
        ...(r.outnames && r.outtypes
          ? {
              resultColumns: Object.freeze(
                r.outnames.map((name, i) => Object.freeze({ name, typeOid: r.outtypes?.[i] ?? 0 })),
              ),
              fromOutParameters: r.outparams,
            }
          : {}),
      }),
    );
  }
  for (const list of functions.values()) Object.freeze(list);

  return Object.freeze({
    version,
    tempSchema: head.temp,
    sessionUser: head.login,
    serverVersionNum: head.version,
    defaultSearchPath: Object.freeze([...head.path]),
    namespaces,
    relations,
    functions,
    types,
    userCodeTypeOids,
  });
}

// The SQL of a catalog read: the whole catalog, or only what changed since an earlier read (incremental).

import {
  CHAIN,
  CHANGED_SUMMARY,
  CHANGED_SUMMARY_SPELLED,
  FIRST_NORMAL_OID,
  head,
  KINDS,
  LOCKED,
  type ReadBase,
  summaryArgs,
} from './catalog-changes.js';

/**
 * The path every read runs under (SET LOCAL, undone with its transaction or savepoint): pg_catalog,
 * then the session's temporary schema named last. Unlisted, Postgres searches the temporary schema
 * for relations before pg_catalog (5.9.3), so a client's `CREATE TEMP TABLE pg_attribute` would
 * stand in for the catalog in a read on its own connection (in-band, relay-in-band-catalog.ts).
 * Functions and operators are never looked up in pg_temp.
 */
export const READ_PATH = 'SET LOCAL search_path = pg_catalog, pg_temp';

/** Names the statements of an incremental read are prepared under on a catalog connection: the head, then each read. */
const PREPARED = {
  summary: 'pgwarden_catalog_summary',
  reads: ['namespaces', 'relations', 'columns', 'constraints', 'types', 'functions'].map(
    (r) => `pgwarden_catalog_${r}`,
  ),
} as const;

/**
 * The reads of a full catalog read, without the transaction around them: one result set each,
 * SET LOCAL's empty one included ({@link RESULT} gives their order); they must run inside one
 * transaction (or savepoint), which undoes the SET LOCAL. An incremental read runs
 * {@link preparedReads} on a catalog connection, {@link inBandHead} then {@link inBandReads} on a
 * client's own connection. `throughProxy` leaves out what a read through pgwarden itself (the
 * MCP server's, as its key) may not use: the lock check (pg_locks needs MANAGE) and the pg_cast
 * fingerprint (a system column); such a catalog is never a base for an incremental read.
 */
export function catalogReads(throughProxy = false): string {
  return `\n${readStatements(undefined, throughProxy).join(';\n')};\n`;
}

/**
 * What the head of an in-band incremental read found changed, as the reads after it take it
 * spelled out as literals ({@link inBandExecuteReads}).
 */
export interface ChangedScope {
  /** OIDs of the relations to read again. */
  readonly reread: readonly number[];
  readonly typesChanged: boolean;
  readonly functionsChanged: boolean;
  /** Types below FIRST_NORMAL_OID that run user code (the base's), seeding the types read. */
  readonly systemUserCode: readonly number[];
}

/**
 * The statements of {@link catalogReads}, head first (a full read's; an incremental read's is
 * {@link CHANGED_SUMMARY}), then SET LOCAL, then the reads. An incremental read's reads take what
 * changed from the head's settings (`'chain'`, on a catalog connection) or from parameters
 * (`'params'`, in-band: {@link IN_BAND_PARAMS}), the same text for every read, prepared once; a
 * full read's (`undefined`) read everything.
 */
function readStatements(scope: 'chain' | 'params' | undefined, throughProxy: boolean): string[] {
  const incremental = scope !== undefined;
  /** What changed, from the head's settings (`'chain'`) or the parameters of {@link IN_BAND_PARAMS} (`'params'`). */
  const setting = (name: string) =>
    scope === 'params' ? (IN_BAND_PARAMS[name] as string) : `(SELECT current_setting('${name}'))`;
  /** A filter on relation OID `col`: every relation in a full read, the changed ones in an incremental one. */
  const inScope = (col: string): string =>
    !incremental ? 'true' : `${col} = ANY (${setting(CHAIN.reread)}::oid[])`;
  const userOnly = (col: string) => (incremental ? `${col} >= ${FIRST_NORMAL_OID}` : 'true');
  const systemUserCode = incremental ? setting(CHAIN.systemUserCode) : `'{}'`;
  /** Whether user types / functions are read: in an incremental read when they changed, else always. */
  const when = (name: string): string => (incremental ? `${setting(name)}::bool` : 'true');
  // After the head, `SET LOCAL search_path = pg_catalog, pg_temp` (READ_PATH, undone by COMMIT),
  // as pg_dump does, so pg_get_viewdef / pg_get_expr / format_type schema-qualify every object outside pg_catalog and
  // the definitions read the same whatever path the analysis later runs under.
  return [
    head(undefined, throughProxy),
    READ_PATH,
    'SELECT oid, nspname FROM pg_namespace',
    `WITH RECURSIVE ${throughProxy ? 'blk AS (SELECT NULL::oid AS oid WHERE false)' : LOCKED}
SELECT c.oid, n.nspname, c.relname, c.relkind::text AS relkind, ${inScope('c.oid')} AS reread,
       c.relkind IN ('v', 'm') AND c.oid IN (SELECT oid FROM blk) AS blocked,
       CASE WHEN c.relkind IN ('v', 'm') AND ${inScope('c.oid')} AND c.oid NOT IN (SELECT oid FROM blk)
            THEN pg_get_viewdef(c.oid) END AS def,
       c.reltype, c.relhassubclass, (SELECT t.typarray FROM pg_type t WHERE t.oid = c.reltype) AS relarray,
       ARRAY(SELECT i.inhparent FROM pg_inherits i WHERE i.inhrelid = c.oid ORDER BY i.inhseqno) AS parents
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ${KINDS} AND ${userOnly('c.oid')} AND ${inScope('c.oid')}`,
    `WITH RECURSIVE uniq AS (
  -- Key columns of unique and exclusion indexes (every UNIQUE, PRIMARY KEY and EXCLUDE constraint
  -- has one); INCLUDE columns (position > indnkeyatts) do not take part in the uniqueness check.
  SELECT i.indrelid AS rel, k.attnum::int AS attnum
    FROM pg_index i, unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
   WHERE (i.indisunique OR i.indisexclusion) AND k.ord <= i.indnkeyatts AND k.attnum > 0 AND ${inScope('i.indrelid')}
  UNION
  -- Columns read by an index expression or a partial-index predicate: a write to them can also
  -- end in 23505/23P01. Read conservatively from the node tree: every Var's varattno (all Vars of
  -- an index expression are the indexed table's; 0 is a whole-row reference = every column).
  SELECT i.indrelid, m[1]::int
    FROM pg_index i, regexp_matches(concat(i.indexprs::text, ' ', i.indpred::text), ':varattno (\\d+)', 'g') AS m
   WHERE (i.indisunique OR i.indisexclusion) AND (i.indexprs IS NOT NULL OR i.indpred IS NOT NULL)
     AND ${inScope('i.indrelid')}
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
   WHERE ${inScope('d.adrelid')}
   GROUP BY d.adrelid, d.adnum
)
SELECT a.attrelid AS rel, a.attname, a.attnum, a.atttypid, format_type(a.atttypid, a.atttypmod) AS typname,
       a.attnotnull,
       CASE WHEN a.attgenerated <> '' THEN pg_get_expr(d.adbin, d.adrelid) END AS gen,
       CASE WHEN a.attgenerated <> '' THEN coalesce(g.cols, '{}') END AS genfrom,
       coalesce(a.attnum = ANY (u.atts) OR 0 = ANY (u.atts), false) AS uniq
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ${KINDS}
  LEFT JOIN pg_attrdef d ON a.attgenerated <> '' AND d.adrelid = a.attrelid AND d.adnum = a.attnum
  LEFT JOIN gen_from g ON a.attgenerated <> '' AND g.rel = a.attrelid AND g.attnum = a.attnum
  LEFT JOIN uniq_by_rel u ON u.rel = a.attrelid
 WHERE a.attnum > 0 AND NOT a.attisdropped AND ${inScope('a.attrelid')}
 ORDER BY a.attrelid, a.attnum`,
    `SELECT i.indrelid AS rel, CASE WHEN i.indisexclusion THEN 'exclusion' ELSE 'unique' END AS kind,
       ic.relname AS name,
       ARRAY(SELECT DISTINCT a FROM (
         SELECT k.attnum::int AS a FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
          WHERE k.ord <= i.indnkeyatts AND k.attnum > 0
         UNION ALL
         SELECT m[1]::int FROM regexp_matches(concat(i.indexprs::text, ' ', i.indpred::text), ':varattno (\\d+)', 'g') AS m
       ) x WHERE a >= 0) AS atts,
       NULL::text AS ref_schema, NULL::text AS ref_table, NULL::text[] AS ref_cols,
       true AS validated, NULL::text[] AS events, NULL::json AS reads
  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE (i.indisunique OR i.indisexclusion) AND ${inScope('i.indrelid')}
UNION ALL
SELECT c.conrelid, CASE c.contype WHEN 'c' THEN 'check' ELSE 'foreign' END, c.conname, c.conkey::int[],
       rn.nspname::text, rc.relname::text,
       ARRAY(SELECT ra.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.attnum ORDER BY k.ord),
       c.convalidated, NULL, NULL
  FROM pg_constraint c
  LEFT JOIN pg_class rc ON rc.oid = c.confrelid LEFT JOIN pg_namespace rn ON rn.oid = rc.relnamespace
 WHERE c.contype IN ('c', 'f') AND c.conrelid <> 0 AND ${inScope('c.conrelid')}
UNION ALL
-- The partition key of the relation and of each ancestor: an UPDATE of a key column moves the row
-- or fails on the other key columns' values. Columns by name (a partition's attnums may differ).
SELECT c.oid, 'partition', pc.relname::text,
       ARRAY(SELECT DISTINCT ca.attnum::int FROM pg_attribute pa
               JOIN pg_attribute ca ON ca.attrelid = c.oid AND ca.attname = pa.attname AND NOT ca.attisdropped
              WHERE pa.attrelid = pt.partrelid AND pa.attnum > 0
                AND (pa.attnum = ANY (pt.partattrs::int2[])
                     OR pa.attnum::text IN (SELECT m[1] FROM regexp_matches(coalesce(pt.partexprs::text, ''), ':varattno (\\d+)', 'g') AS m)))
         || CASE WHEN coalesce(pt.partexprs::text, '') LIKE '%:varattno 0 %' THEN '{0}'::int[] ELSE '{}' END,
       NULL, NULL, NULL, true, NULL, NULL
  FROM pg_class c, pg_partition_ancestors(c.oid) AS a(relid)
  JOIN pg_partitioned_table pt ON pt.partrelid = a.relid JOIN pg_class pc ON pc.oid = pt.partrelid
 WHERE (c.relkind = 'p' OR c.relispartition) AND ${inScope('c.oid')}
UNION ALL
-- User triggers (enabled, any level): their function gets the whole row (attnum 0: every column).
SELECT t.tgrelid, 'trigger', t.tgname::text, '{0}'::int[], NULL, NULL, NULL, true,
       array_remove(ARRAY[CASE WHEN t.tgtype::int & 4 <> 0 THEN 'INSERT' END,
                          CASE WHEN t.tgtype::int & 16 <> 0 THEN 'UPDATE' END,
                          CASE WHEN t.tgtype::int & 8 <> 0 THEN 'DELETE' END], NULL), NULL
  FROM pg_trigger t
 WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND ${inScope('t.tgrelid')}
UNION ALL
-- Row-level security policies for UPDATE and DELETE: the columns USING and WITH CHECK read (a
-- subquery in either: every column, attnum 0).
SELECT p.polrelid, 'policy', p.polname::text,
       ARRAY(SELECT DISTINCT m[1]::int FROM regexp_matches(concat(p.polqual::text, ' ', p.polwithcheck::text), ':varattno (\\d+)', 'g') AS m)
         || CASE WHEN concat(p.polqual::text, ' ', p.polwithcheck::text) LIKE '%{SUBLINK%' THEN '{0}'::int[] ELSE '{}' END,
       NULL, NULL, NULL, true,
       CASE p.polcmd WHEN 'w' THEN '{UPDATE}'::text[] WHEN 'd' THEN '{DELETE}' ELSE '{UPDATE,DELETE}' END, NULL
  FROM pg_policy p JOIN pg_class pc ON pc.oid = p.polrelid
 WHERE pc.relrowsecurity AND p.polcmd IN ('w', 'd', '*') AND ${inScope('p.polrelid')}
UNION ALL
-- Enabled rules on writes (CREATE RULE … ON INSERT/UPDATE/DELETE): the rewriter puts their
-- condition and actions, over OLD and NEW (attnum 0: every column), into the caller's statement,
-- run with the rule owner's privileges; \`reads\`: the other relations they name (pg_depend).
SELECT r.ev_class, 'rule', r.rulename::text, '{0}'::int[], NULL, NULL, NULL, true,
       ARRAY[CASE r.ev_type WHEN '2' THEN 'UPDATE' WHEN '3' THEN 'INSERT' ELSE 'DELETE' END],
       (SELECT json_agg(DISTINCT jsonb_build_array(dn.nspname::text, dc.relname::text))
          FROM pg_depend d JOIN pg_class dc ON dc.oid = d.refobjid JOIN pg_namespace dn ON dn.oid = dc.relnamespace
         WHERE d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
           AND d.refobjid <> r.ev_class)
  FROM pg_rewrite r
 WHERE r.ev_type IN ('2', '3', '4') AND r.ev_enabled <> 'D' AND ${inScope('r.ev_class')}`,
    `WITH RECURSIVE tt AS (
  SELECT t.oid, t.typname, t.typcategory, t.typelem, t.typtype, t.typbasetype, t.typrelid, n.nspname
    FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
   WHERE n.nspname <> 'pg_toast' AND ${userOnly('t.oid')}
), edges(child, parent) AS (
  -- What a type is built on: an array on its element, a domain on its base type, a range on its
  -- subtype and a multirange on its range, a composite type (row types of tables included) on each
  -- attribute's type.
  SELECT t.typelem, t.oid FROM tt t WHERE t.typcategory = 'A' AND t.typelem <> 0
  UNION ALL SELECT t.typbasetype, t.oid FROM tt t WHERE t.typtype = 'd'
  UNION ALL SELECT r.rngsubtype, r.rngtypid FROM pg_range r JOIN tt ON tt.oid = r.rngtypid
  UNION ALL SELECT r.rngtypid, r.rngmultitypid FROM pg_range r JOIN tt ON tt.oid = r.rngmultitypid
  UNION ALL SELECT a.atttypid, t.oid FROM tt t
    JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE t.typtype = 'c'
), uc(oid, why) AS (
  -- Types whose input runs user code: domains outside the system schemas (their CHECKs may call
  -- any function), targets of user-defined cast functions, and every type built on one (an
  -- incremental read starts from the system types the earlier read found).
  SELECT t.oid, 'domain'::text FROM tt t WHERE t.typtype = 'd' AND t.nspname NOT IN ('pg_catalog', 'information_schema')
  UNION
  SELECT c.casttarget, 'user cast' FROM pg_cast c
   WHERE (SELECT p.pronamespace FROM pg_proc p WHERE p.oid = c.castfunc) <> 'pg_catalog'::regnamespace
  UNION
  SELECT x, 'user cast' FROM unnest(${systemUserCode}::oid[]) AS x
  UNION
  SELECT e.parent, 'built on a type with user code' FROM uc u JOIN edges e ON e.child = u.oid
)
SELECT t.oid, t.nspname, t.typname, (SELECT min(u.why) FROM uc u WHERE u.oid = t.oid) AS why FROM tt t
 WHERE ${when(CHAIN.types)}`,
    `SELECT p.oid, n.nspname, p.proname, p.proargtypes::text AS args, p.prorettype, p.proretset,
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
  LEFT JOIN pg_type rt ON rt.oid = p.prorettype
 WHERE ${userOnly('p.oid')} AND ${when(CHAIN.functions)}`,
  ];
}

/**
 * The parameters of the in-band prepared reads ({@link inBandPrepares}), standing for the
 * {@link CHAIN} settings a catalog connection's reads take: $1 the relations to read again, $2 and
 * $3 whether user types and functions changed, $4 the system types running user code.
 */
const IN_BAND_PARAMS: Readonly<Record<string, string>> = {
  [CHAIN.reread]: '$1::int8[]::oid[]',
  [CHAIN.types]: '$2::bool',
  [CHAIN.functions]: '$3::bool',
  [CHAIN.systemUserCode]: '$4::int8[]::oid[]',
};

/** The suffixes of the statements {@link inBandPrepares} prepares: the head, then the reads in {@link RESULT} order. */
const IN_BAND_READS = [
  'head',
  'namespaces',
  'relations',
  'columns',
  'constraints',
  'types',
  'functions',
] as const;

/**
 * The PREPARE statements of an in-band incremental read (on a client's own connection), named
 * `prefix` + `_` + a suffix of {@link IN_BAND_READS}: the head with the seven parameters of
 * {@link CHANGED_SUMMARY} (setting nothing), the reads with the four of {@link IN_BAND_PARAMS}.
 * They must be sent under READ_PATH (names bind under it; Postgres parses a prepared statement
 * again under the path current at EXECUTE when that differs, and every EXECUTE runs under
 * READ_PATH too). `prefix` must be a plain lower-case identifier (it is not quoted). Prepared
 * once per connection: planning, most of an in-band read's cost, is then paid once (with
 * `plan_cache_mode = force_generic_plan`). Source: PostgreSQL 15 docs, PREPARE.
 */
export function inBandPrepares(prefix: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(prefix)) throw new Error(`not a plain name: ${prefix}`);
  const [, , ...reads] = readStatements('params', false);
  const types = 'text, int8[], int[], int8[], int, int, int8[]';
  return [
    `PREPARE ${prefix}_head(${types}) AS ${CHANGED_SUMMARY_SPELLED}`,
    ...reads.map((r, i) => {
      const name = `${prefix}_${IN_BAND_READS[i + 1]}`;
      // Every read takes the four parameters, used or not (the namespaces read uses none).
      return `PREPARE ${name}(int8[], bool, bool, int8[]) AS ${r}`;
    }),
    '',
  ].join(';\n');
}

/** How many statements {@link inBandPrepares} prepares (each a result set of the message it is sent in). */
export const IN_BAND_STATEMENTS = IN_BAND_READS.length;

/** The head of an in-band incremental read, as an EXECUTE of the statement {@link inBandPrepares} prepared under `prefix`. */
export function inBandExecuteHead(prefix: string, base: ReadBase): string {
  return `EXECUTE ${prefix}_head(${summaryArgs(base).join(', ')});`;
}

/**
 * The reads of an in-band incremental read after its head (what {@link inBandReads} gives), each
 * an EXECUTE of a statement {@link inBandPrepares} prepared under `prefix`, what changed as
 * literal parameters. Throws an Error for an OID that is not a safe integer.
 */
export function inBandExecuteReads(prefix: string, scope: ChangedScope): string {
  const oids = (xs: readonly number[]) => {
    for (const x of xs) if (!Number.isSafeInteger(x) || x < 0) throw new Error(`not an OID: ${x}`);
    return `'{${xs.join(',')}}'`;
  };
  const args = `(${oids(scope.reread)}, ${scope.typesChanged}, ${scope.functionsChanged}, ${oids(scope.systemUserCode)})`;
  return `\n${[READ_PATH, ...IN_BAND_READS.slice(1).map((r) => `EXECUTE ${prefix}_${r}${args}`)].join(';\n')};\n`;
}

/** Indexes of {@link catalogReads}'s result sets (SET LOCAL also produces one). */
export const RESULT = {
  head: 0,
  namespaces: 2,
  relations: 3,
  columns: 4,
  constraints: 5,
  userTypes: 6,
  functions: 7,
  count: 8,
} as const;

/** The reads of a full catalog read (no earlier read to compare with). */
export const CATALOG_READS = catalogReads();

/**
 * What a catalog connection prepares once for its incremental reads: the PREPARE statements, as
 * one message to run outside a transaction block. The head is prepared under the login's own
 * search_path, the reads under `pg_catalog` alone, the path they run under (a plan prepared under
 * another path would be made again at every run).
 */
export const PREPARE_INCREMENTAL = ((): string => {
  const [, , ...reads] = readStatements('chain', false);
  const types = 'text, int8[], int[], int8[], int, int, int8[]';
  return [
    `PREPARE ${PREPARED.summary}(${types}) AS ${CHANGED_SUMMARY}`,
    'BEGIN',
    READ_PATH,
    ...reads.map((r, i) => `PREPARE ${PREPARED.reads[i]} AS ${r}`),
    'COMMIT;',
  ].join(';\n');
})();

/** The names {@link PREPARE_INCREMENTAL} prepares (to find which a connection already has, in pg_prepared_statements). */
export const PREPARED_NAMES: readonly string[] = [PREPARED.summary, ...PREPARED.reads];

/**
 * The reads of an incremental read on a catalog connection that ran {@link PREPARE_INCREMENTAL}:
 * the same result sets as `catalogReads(base)`, each an `EXECUTE` of a prepared statement.
 * Throws an Error when `base` holds a malformed snapshot or OID.
 */
export function preparedReads(base: ReadBase): string {
  return [
    `\nEXECUTE ${PREPARED.summary}(${summaryArgs(base).join(', ')})`,
    READ_PATH,
    ...PREPARED.reads.map((n) => `EXECUTE ${n}`),
    '',
  ].join(';\n');
}

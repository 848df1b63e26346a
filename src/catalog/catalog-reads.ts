// The SQL of a catalog read: the whole catalog, or only what changed since an earlier read (incremental).

/**
 * PostgreSQL's FirstNormalObjectId: every object created after initdb (by any user, DDL,
 * CREATE EXTENSION) has an OID at or above it; those below it (pg_catalog, information_schema,
 * their views and functions) never change without a superuser. An incremental read keeps the
 * objects below it from the earlier read and re-reads only objects above it.
 * Source: src/include/access/transam.h.
 */
export const FIRST_NORMAL_OID = 16384;

/** What an incremental read compares against: facts of the earlier read ({@link CatalogStamp}). */
export interface ReadBase {
  /** pg_current_snapshot() of the earlier read, e.g. `775:780:776,778`. */
  readonly snapshot: string;
  /** OID and count of each user relation's constraints then (unique/exclusion indexes, CHECK, FOREIGN KEY, user triggers, UPDATE/DELETE policies: all but partition keys). */
  readonly relationConstraints: readonly (readonly [oid: number, count: number])[];
  /** Views whose definition the earlier read could not take (a lock): read again. */
  readonly pending: readonly number[];
  /** Types below FIRST_NORMAL_OID that the earlier read found to run user code (seeds the recursion). */
  readonly systemUserCodeTypes: readonly number[];
  /** How many types and functions at or above FIRST_NORMAL_OID the earlier read found (a DROP leaves no row behind). */
  readonly userTypes: number;
  readonly userFunctions: number;
}

/**
 * The values of a base as SQL expressions: literals (one Simple Query, in-band) or the
 * parameters $1…$7 of {@link CHANGED_SUMMARY} (snapshot, relation OIDs, their constraint counts,
 * pending views, user type count, user function count, system types running user code).
 */
interface BaseSql {
  readonly snapshot: string;
  readonly oids: string;
  readonly counts: string;
  readonly pending: string;
  readonly types: string;
  readonly functions: string;
  readonly systemUserCode: string;
}

const PARAMS: BaseSql = {
  snapshot: '$1::text::pg_snapshot',
  oids: '$2::int8[]::oid[]',
  counts: '$3::int[]',
  pending: '$4::int8[]::oid[]',
  types: '$5::int',
  functions: '$6::int',
  systemUserCode: '$7::int8[]::oid[]',
};

function literals(base: ReadBase): BaseSql {
  const [snapshot, oids, counts, pending, types, functions, systemUserCode] = summaryArgs(base);
  return {
    snapshot: `${snapshot}::pg_snapshot`,
    oids: `${oids}::oid[]`,
    counts: `${counts}::int[]`,
    pending: `${pending}::oid[]`,
    types: types as string,
    functions: functions as string,
    systemUserCode: `${systemUserCode}::oid[]`,
  };
}

/** The values of `base` as SQL literals, in the order of the parameters of {@link CHANGED_SUMMARY} (validated: the text goes into SQL). */
function summaryArgs(base: ReadBase): string[] {
  if (!SNAPSHOT.test(base.snapshot)) throw new Error(`not a snapshot: ${base.snapshot}`);
  return [
    `'${base.snapshot}'`,
    intArray(base.relationConstraints.map(([o]) => o)),
    intArray(base.relationConstraints.map(([, n]) => n)),
    intArray(base.pending),
    String(Math.trunc(base.userTypes)),
    String(Math.trunc(base.userFunctions)),
    intArray(base.systemUserCodeTypes),
  ];
}

/** Names the statements of an incremental read are prepared under on a catalog connection: the head, then each read. */
const PREPARED = {
  summary: 'pgwarden_catalog_summary',
  reads: ['namespaces', 'relations', 'columns', 'constraints', 'types', 'functions'].map(
    (r) => `pgwarden_catalog_${r}`,
  ),
} as const;

const SNAPSHOT = /^\d+:\d+:(\d+(,\d+)*)?$/;

/** `'{1,2,3}'` for a list of integers (validated: the text goes into SQL). */
function intArray(xs: readonly number[]): string {
  for (const x of xs) if (!Number.isSafeInteger(x) || x < 0) throw new Error(`not an OID: ${x}`);
  return `'{${xs.join(',')}}'`;
}

/**
 * True when the row version with `xmin` was written after the snapshot of the earlier read
 * (not visible in it): by a transaction that had not committed then, or the session's own.
 * xmin is 32 bits; it is widened to the epoch of the snapshot's xmax by the signed distance,
 * as PostgreSQL's TransactionIdPrecedes does. Frozen or ancient xids may widen to "new": that
 * only re-reads a relation more, never less. Needs the CTE `b`.
 */
function isNew(xmin: string): string {
  return `(${xmin}::text::int8 > 2 AND NOT pg_visible_in_snapshot(greatest(0, b.x8 + ((${xmin}::text::int8 - b.x8 % 4294967296 + 6442450944) % 4294967296 - 2147483648))::text::xid8, b.s))`;
}

/**
 * Views whose definition cannot be printed now without waiting: pg_get_viewdef takes
 * AccessShareLock on every relation the view reads (AcquireRewriteLocks), which waits behind an
 * AccessExclusiveLock held or awaited by another session (ALTER TABLE in an open transaction).
 * Such views are reported `blocked` and their definition is not read.
 */
const LOCKED = `lk AS (
  SELECT l.relation AS oid FROM pg_locks l
   WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.pid <> pg_backend_pid()
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
), blk AS (
  SELECT oid FROM lk
  UNION SELECT r.ev_class FROM lk JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = lk.oid
    AND d.classid = 'pg_rewrite'::regclass JOIN pg_rewrite r ON r.oid = d.objid
)`;

/**
 * The relations to read again (CTE `rr`) after the earlier read `base`: those with a pg_class,
 * pg_attribute, pg_attrdef, pg_index, pg_constraint, pg_rewrite, pg_trigger or pg_policy row
 * written since, with a column of a type changed since, whose count of constraints, user triggers
 * and UPDATE/DELETE policies changed (a DROP leaves no row behind), views
 * reading a function or type changed since (their printed definition names it), views left
 * pending; then, transitively, views reading one of those and tables with a foreign key to one
 * (their printed definition and referenced names change with a rename).
 */
function changed(v: BaseSql): string {
  return `b AS (SELECT ${v.snapshot} AS s, pg_snapshot_xmax(${v.snapshot})::text::int8 AS x8),
prev(oid, n) AS (SELECT * FROM unnest(${v.oids}, ${v.counts})),
chg(oid) AS (
  SELECT c.oid FROM pg_class c, b WHERE c.oid >= ${FIRST_NORMAL_OID} AND ${isNew('c.xmin')}
  UNION SELECT a.attrelid FROM pg_attribute a, b WHERE a.attrelid >= ${FIRST_NORMAL_OID} AND ${isNew('a.xmin')}
  UNION SELECT d.adrelid FROM pg_attrdef d, b WHERE ${isNew('d.xmin')}
  UNION SELECT i.indrelid FROM pg_index i, b WHERE i.indrelid >= ${FIRST_NORMAL_OID} AND ${isNew('i.xmin')}
  UNION SELECT k.conrelid FROM pg_constraint k, b WHERE k.conrelid >= ${FIRST_NORMAL_OID} AND ${isNew('k.xmin')}
  UNION SELECT r.ev_class FROM pg_rewrite r, b WHERE r.ev_class >= ${FIRST_NORMAL_OID} AND ${isNew('r.xmin')}
  UNION SELECT t.tgrelid FROM pg_trigger t, b WHERE t.tgrelid >= ${FIRST_NORMAL_OID} AND ${isNew('t.xmin')}
  UNION SELECT p.polrelid FROM pg_policy p, b WHERE p.polrelid >= ${FIRST_NORMAL_OID} AND ${isNew('p.xmin')}
  UNION SELECT a.attrelid FROM pg_attribute a
   WHERE a.attrelid >= ${FIRST_NORMAL_OID} AND a.atttypid >= ${FIRST_NORMAL_OID}
     AND a.atttypid IN (SELECT t.oid FROM pg_type t, b WHERE t.oid >= ${FIRST_NORMAL_OID} AND ${isNew('t.xmin')})
  UNION SELECT r.ev_class FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
    LEFT JOIN pg_type t ON d.refclassid = 'pg_type'::regclass AND t.oid = d.refobjid
    LEFT JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND p.oid = d.refobjid, b
   WHERE r.ev_class >= ${FIRST_NORMAL_OID} AND d.refobjid >= ${FIRST_NORMAL_OID}
     AND (${isNew('t.xmin')} OR ${isNew('p.xmin')})
  UNION SELECT p.oid FROM prev p
    LEFT JOIN (SELECT i.indrelid AS oid, count(*) AS n FROM pg_index i
                WHERE i.indisunique OR i.indisexclusion GROUP BY 1) ni ON ni.oid = p.oid
    LEFT JOIN (SELECT k.conrelid AS oid, count(*) AS n FROM pg_constraint k
                WHERE k.contype IN ('c', 'f') GROUP BY 1) nk ON nk.oid = p.oid
    LEFT JOIN (SELECT t.tgrelid AS oid, count(*) AS n FROM pg_trigger t
                WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' GROUP BY 1) nt ON nt.oid = p.oid
    LEFT JOIN (SELECT y.polrelid AS oid, count(*) AS n FROM pg_policy y JOIN pg_class yc ON yc.oid = y.polrelid
                WHERE yc.relrowsecurity AND y.polcmd IN ('w', 'd', '*') GROUP BY 1) np ON np.oid = p.oid
   WHERE p.n <> coalesce(ni.n, 0) + coalesce(nk.n, 0) + coalesce(nt.n, 0) + coalesce(np.n, 0)
  UNION SELECT unnest(${v.pending})
), dep(src, dst) AS (
  SELECT d.refobjid, r.ev_class FROM pg_rewrite r JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass
    AND d.objid = r.oid AND d.refclassid = 'pg_class'::regclass
   WHERE r.ev_class >= ${FIRST_NORMAL_OID} AND d.refobjid <> r.ev_class
  UNION ALL SELECT k.confrelid, k.conrelid FROM pg_constraint k WHERE k.contype = 'f' AND k.conrelid >= ${FIRST_NORMAL_OID}
), rr(oid) AS (
  SELECT oid FROM chg
  UNION SELECT dep.dst FROM rr JOIN dep ON dep.src = rr.oid
)`;
}

/** Relation kinds the Catalog holds. */
const KINDS = `('r', 'p', 'v', 'm', 'f', 'S')`;

/** The summary columns of an incremental read (needs the CTEs of `changed`): what to read again, what is gone. */
function summaryColumns(v: BaseSql): string {
  return `(SELECT coalesce(array_agg(oid), '{}') FROM rr)::int8[] AS reread,
       (SELECT coalesce(array_agg(p.oid), '{}') FROM prev p
         WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.oid AND c.relkind IN ${KINDS}))::int8[] AS dropped,
       EXISTS (SELECT 1 FROM rr) OR EXISTS (SELECT 1 FROM pg_type t, b WHERE t.oid >= ${FIRST_NORMAL_OID} AND ${isNew('t.xmin')})
         OR (SELECT count(*) FROM pg_type t WHERE t.oid >= ${FIRST_NORMAL_OID} AND t.typnamespace <> 'pg_toast'::regnamespace) <> ${v.types}
         AS types_changed,
       EXISTS (SELECT 1 FROM pg_proc p, b WHERE p.oid >= ${FIRST_NORMAL_OID} AND ${isNew('p.xmin')})
         OR (SELECT count(*) FROM pg_proc p WHERE p.oid >= ${FIRST_NORMAL_OID}) <> ${v.functions}
         -- a function returning the row type of a changed relation yields its new columns
         OR EXISTS (SELECT 1 FROM pg_proc p JOIN pg_type t ON t.oid = p.prorettype
                     WHERE p.oid >= ${FIRST_NORMAL_OID} AND t.typrelid IN (SELECT oid FROM rr)) AS functions_changed`;
}

/**
 * Transaction-local settings (`set_config(…, true)`) through which the head of an incremental
 * read hands what changed to the reads after it in the same message: the search runs once, and
 * the whole read is one round trip. They are undone with the read's transaction (or savepoint).
 */
const CHAIN = {
  reread: 'pgwarden_catalog.reread',
  types: 'pgwarden_catalog.types_changed',
  functions: 'pgwarden_catalog.functions_changed',
  systemUserCode: 'pgwarden_catalog.system_user_code',
} as const;

/**
 * The head read: server version, the login's path (taken before `SET LOCAL search_path`: it is
 * the login's own path with "$user" expanded and schemas that are missing or lack USAGE
 * dropped, 9.26 System Information Functions), temp schema, login, this read's snapshot and a
 * fingerprint of pg_cast; in an incremental read also the summary of what changed, which it
 * also sets as the {@link CHAIN} settings the reads after it filter on.
 */
function head(v: BaseSql | undefined, throughProxy = false): string {
  const casts = throughProxy
    ? 'NULL::text'
    : `(SELECT md5(string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid)) FROM pg_cast)`;
  const select = `SELECT current_setting('server_version_num')::int AS version, current_schemas(false)::text[] AS path,
       coalesce(nullif(pg_my_temp_schema(), 0)::regnamespace::text, '') AS temp, current_user::text AS login,
       pg_current_snapshot()::text AS snapshot, ${casts} AS casts`;
  if (!v) return select;
  return `WITH RECURSIVE ${changed(v)}
SELECT h.*, concat(set_config('${CHAIN.reread}', h.reread::text, true),
                   set_config('${CHAIN.types}', h.types_changed::text, true),
                   set_config('${CHAIN.functions}', h.functions_changed::text, true),
                   set_config('${CHAIN.systemUserCode}', ${v.systemUserCode}::text, true)) <> '' AS chained
  FROM (${select},
       ${summaryColumns(v)}) h`;
}

/**
 * The head of an incremental read on a catalog connection, with the values of the base as its
 * parameters $1…$7: prepared once per connection (`PREPARE … AS`), so the search is planned
 * once, and run by `EXECUTE` as the first read of the message.
 */
export const CHANGED_SUMMARY = head(PARAMS);

/**
 * The reads of one catalog read, without the transaction around them: one result set each,
 * SET LOCAL's empty one included ({@link RESULT} gives their order). They must run inside one
 * transaction (or savepoint): an incremental read's head hands what changed to the others
 * through transaction-local settings.
 * - Without `base`: everything.
 * - With `base` (one message, one round trip): the head searches what changed since `base`
 *   (`reread`, `dropped`, `types_changed`, `functions_changed`), once; objects below
 *   FIRST_NORMAL_OID are not read (the caller keeps them from the earlier read); relations,
 *   columns and constraints are read for the changed relations only; user types and functions
 *   only when they changed. The head has the values of `base` spelled out (an in-band read,
 *   where nothing is prepared; a catalog connection runs {@link preparedReads} instead).
 * `throughProxy` leaves out what a read through pgwarden itself (the MCP server's, as its key)
 * may not use: the lock check (pg_locks needs MANAGE) and the pg_cast fingerprint (a system
 * column); such a catalog is never a base for an incremental read.
 * Throws an Error when `base` holds a malformed snapshot or OID (it is spliced into the SQL).
 */
export function catalogReads(base?: ReadBase, throughProxy = false): string {
  const [first, ...reads] = readStatements(base !== undefined, throughProxy);
  return `\n${base ? head(literals(base)) : first};\n${reads.join(';\n')};\n`;
}

/**
 * The statements of {@link catalogReads}, head first (a full read's; an incremental read's is
 * {@link CHANGED_SUMMARY}), then SET LOCAL, then the reads. An incremental read's reads name no
 * value of its base (they take what changed from the head's settings): they are the same text
 * for every read, and can be prepared once.
 */
function readStatements(incremental: boolean, throughProxy: boolean): string[] {
  const setting = (name: string) => `(SELECT current_setting('${name}'))`;
  /** A filter on relation OID `col`: every relation in a full read, the changed ones in an incremental one. */
  const inScope = (col: string): string =>
    incremental ? `${col} = ANY (${setting(CHAIN.reread)}::oid[])` : 'true';
  const userOnly = (col: string) => (incremental ? `${col} >= ${FIRST_NORMAL_OID}` : 'true');
  const systemUserCode = incremental ? setting(CHAIN.systemUserCode) : `'{}'`;
  /** Whether user types / functions are read: in an incremental read when they changed, else always. */
  const when = (name: string): string => (incremental ? `${setting(name)}::bool` : 'true');
  // After the head, `SET LOCAL search_path = pg_catalog` (undone by COMMIT), as pg_dump does, so
  // pg_get_viewdef / pg_get_expr / format_type schema-qualify every object outside pg_catalog and
  // the definitions read the same whatever path the analysis later runs under.
  return [
    head(undefined, throughProxy),
    'SET LOCAL search_path = pg_catalog',
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
       true AS validated, NULL::text[] AS events
  FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
 WHERE (i.indisunique OR i.indisexclusion) AND ${inScope('i.indrelid')}
UNION ALL
SELECT c.conrelid, CASE c.contype WHEN 'c' THEN 'check' ELSE 'foreign' END, c.conname, c.conkey::int[],
       rn.nspname::text, rc.relname::text,
       ARRAY(SELECT ra.attname::text FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
               JOIN pg_attribute ra ON ra.attrelid = c.confrelid AND ra.attnum = k.attnum ORDER BY k.ord),
       c.convalidated, NULL
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
       NULL, NULL, NULL, true, NULL
  FROM pg_class c, pg_partition_ancestors(c.oid) AS a(relid)
  JOIN pg_partitioned_table pt ON pt.partrelid = a.relid JOIN pg_class pc ON pc.oid = pt.partrelid
 WHERE (c.relkind = 'p' OR c.relispartition) AND ${inScope('c.oid')}
UNION ALL
-- User triggers (enabled, any level): their function gets the whole row (attnum 0: every column).
SELECT t.tgrelid, 'trigger', t.tgname::text, '{0}'::int[], NULL, NULL, NULL, true,
       array_remove(ARRAY[CASE WHEN t.tgtype::int & 4 <> 0 THEN 'INSERT' END,
                          CASE WHEN t.tgtype::int & 16 <> 0 THEN 'UPDATE' END,
                          CASE WHEN t.tgtype::int & 8 <> 0 THEN 'DELETE' END], NULL)
  FROM pg_trigger t
 WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND ${inScope('t.tgrelid')}
UNION ALL
-- Row-level security policies for UPDATE and DELETE: the columns USING and WITH CHECK read (a
-- subquery in either: every column, attnum 0).
SELECT p.polrelid, 'policy', p.polname::text,
       ARRAY(SELECT DISTINCT m[1]::int FROM regexp_matches(concat(p.polqual::text, ' ', p.polwithcheck::text), ':varattno (\\d+)', 'g') AS m)
         || CASE WHEN concat(p.polqual::text, ' ', p.polwithcheck::text) LIKE '%{SUBLINK%' THEN '{0}'::int[] ELSE '{}' END,
       NULL, NULL, NULL, true,
       CASE p.polcmd WHEN 'w' THEN '{UPDATE}'::text[] WHEN 'd' THEN '{DELETE}' ELSE '{UPDATE,DELETE}' END
  FROM pg_policy p JOIN pg_class pc ON pc.oid = p.polrelid
 WHERE pc.relrowsecurity AND p.polcmd IN ('w', 'd', '*') AND ${inScope('p.polrelid')}`,
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
  const [, , ...reads] = readStatements(true, false);
  const types = 'text, int8[], int[], int8[], int, int, int8[]';
  return [
    `PREPARE ${PREPARED.summary}(${types}) AS ${CHANGED_SUMMARY}`,
    'BEGIN',
    'SET LOCAL search_path = pg_catalog',
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
    'SET LOCAL search_path = pg_catalog',
    ...PREPARED.reads.map((n) => `EXECUTE ${n}`),
    '',
  ].join(';\n');
}

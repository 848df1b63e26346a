// What changed in the catalog since an earlier read: the head of an incremental read, its base spelled out as SQL, and the settings it hands to the reads.

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
  /** OID and count of each user relation's constraints then (unique/exclusion indexes, CHECK, FOREIGN KEY, user triggers, UPDATE/DELETE policies, rules on writes: all but partition keys). */
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
 * The values of a base as SQL expressions: the parameters $1…$7 of {@link CHANGED_SUMMARY}
 * (snapshot, relation OIDs, their constraint counts, pending views, user type count, user
 * function count, system types running user code).
 */
export interface BaseSql {
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

/** The values of `base` as SQL literals, in the order of the parameters of {@link CHANGED_SUMMARY} (validated: the text goes into SQL). */
export function summaryArgs(base: ReadBase): string[] {
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
export const LOCKED = `lk AS (
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
 * written since, with a column of a type changed since, whose count of constraints, user triggers,
 * UPDATE/DELETE policies and rules on writes changed (a DROP leaves no row behind), views
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
    LEFT JOIN (SELECT w.ev_class AS oid, count(*) AS n FROM pg_rewrite w
                WHERE w.ev_type IN ('2', '3', '4') AND w.ev_enabled <> 'D' GROUP BY 1) nw ON nw.oid = p.oid
   WHERE p.n <> coalesce(ni.n, 0) + coalesce(nk.n, 0) + coalesce(nt.n, 0) + coalesce(np.n, 0) + coalesce(nw.n, 0)
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
export const KINDS = `('r', 'p', 'v', 'm', 'f', 'S')`;

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
export const CHAIN = {
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
 * also sets as the {@link CHAIN} settings the reads after it filter on (unless `chain` is false:
 * an in-band read spells what changed out in its reads instead).
 */
export function head(v: BaseSql | undefined, throughProxy = false, chain = true): string {
  const casts = throughProxy
    ? 'NULL::text'
    : `(SELECT md5(string_agg(oid::text || ':' || xmin::text, ',' ORDER BY oid)) FROM pg_cast)`;
  const select = `SELECT current_setting('server_version_num')::int AS version, current_schemas(false)::text[] AS path,
       coalesce(nullif(pg_my_temp_schema(), 0)::regnamespace::text, '') AS temp, current_user::text AS login,
       pg_current_snapshot()::text AS snapshot, ${casts} AS casts`;
  if (!v) return select;
  if (!chain) return `WITH RECURSIVE ${changed(v)}\n${select},\n       ${summaryColumns(v)}`;
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
 * {@link CHANGED_SUMMARY} setting nothing (its row spells out what changed): the head of an
 * in-band incremental read, prepared on a client's own connection (catalog-reads.ts inBandPrepares).
 */
export const CHANGED_SUMMARY_SPELLED = head(PARAMS, false, false);

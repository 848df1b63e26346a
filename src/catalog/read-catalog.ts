// Reads one upstream database's Catalog (namespaces, relations, columns, views, functions, search_path) in one round trip.
import type pg from 'pg';
import { buildCatalog, NeedsFullRead, readBaseOf } from './build-catalog.js';
import { catalogReads, PREPARE_INCREMENTAL, PREPARED_NAMES, preparedReads, RESULT } from './catalog-reads.js';
import type { Catalog } from './types.js';

export { buildCatalog, catalogStamp, NeedsFullRead, type ResultRows, readBaseOf } from './build-catalog.js';
export { CATALOG_READS, catalogReads, RESULT } from './catalog-reads.js';

// The whole read is one simple-query message: one round trip, and one REPEATABLE READ snapshot so
// that relations, columns and functions describe the same moment even under concurrent DDL.
function readSql(reads: string): string {
  return `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY;${reads}COMMIT;`;
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
 * `opts.throughProxy` is for a read through pgwarden itself (the MCP server's, as its key): it
 * leaves out the lock check (pg_locks needs MANAGE) and the pg_cast fingerprint.
 * With `base` (an earlier catalog of the same database read here), the read is incremental: only
 * relations changed since `base` was read, user types and user functions are read; the rest is
 * taken from `base` (see catalogReads); when that cannot apply (a schema renamed or dropped,
 * pg_cast changed) it reads everything. Views whose definition would wait on another session's
 * lock are not waited for (see buildCatalog).
 *
 * Runs in one round trip (one simple-query message: BEGIN, the reads, COMMIT) under one
 * REPEATABLE READ, READ ONLY snapshot; ~40 ms on the demo database (211 relations, 3244
 * functions), of which ~16 ms is pg_get_viewdef over the system views; an incremental read
 * after a CREATE TABLE a few ms (its statements are prepared on `client` once, as
 * `pgwarden_catalog_*`, and run with generic plans).
 * Rejects with the server's error as pg raises it (DatabaseError, SQLSTATE in `code`: e.g.
 * `57014` query_canceled under statement_timeout, `40001` serialization_failure on a hot standby
 * in conflict), or with the connection's error, after a best-effort ROLLBACK that leaves
 * the session idle; rejects with a plain Error if the server returns an unexpected number of
 * result sets.
 * Sources: PostgreSQL 15 docs ch. 53 System Catalogs (pg_namespace, pg_class, pg_attribute,
 * pg_attrdef, pg_index, pg_depend, pg_proc), 9.26 System Information Functions (format_type,
 * pg_get_viewdef, pg_get_expr, current_schemas).
 */
export async function readCatalog(
  client: pg.ClientBase,
  version: number,
  base?: Catalog,
  opts: { readonly throughProxy?: boolean } = {},
): Promise<Catalog> {
  const throughProxy = opts.throughProxy === true;
  const readBase = base ? readBaseOf(base) : undefined;
  if (readBase && base) {
    // One message: the head (the search of what changed) hands its answer to the reads after it;
    // every statement is prepared on this connection once, with a generic plan, so none is
    // planned again.
    if (!prepared.has(client)) await prepare(client);
    prepared.add(client);
    const sql = readSql(`SET LOCAL plan_cache_mode = force_generic_plan;${preparedReads(readBase)}`);
    try {
      return build(await run(client, sql), version, base);
    } catch (e) {
      if (!(e instanceof NeedsFullRead)) throw e;
    }
  }
  return build(await run(client, readSql(catalogReads(throughProxy))), version);
}

/** Connections that have the statements of {@link PREPARE_INCREMENTAL} (a prepared statement lasts as long as its session). */
const prepared = new WeakSet<pg.ClientBase>();

/** Prepares {@link PREPARE_INCREMENTAL} on `client`, after dropping what an earlier, interrupted attempt left. */
async function prepare(client: pg.ClientBase): Promise<void> {
  const r = await client.query<{ name: string }>(
    'SELECT name FROM pg_prepared_statements WHERE name = ANY ($1::text[])',
    [PREPARED_NAMES],
  );
  if (r.rows.length === PREPARED_NAMES.length) return;
  const drop = r.rows.map((x) => `DEALLOCATE ${x.name};`).join('');
  await run(client, `${drop}${PREPARE_INCREMENTAL}`);
}

async function run(client: pg.ClientBase, sql: string): Promise<pg.QueryResult[]> {
  try {
    return (await client.query(sql)) as unknown as pg.QueryResult[];
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** `results`: BEGIN's, the reads' (SET LOCAL plan_cache_mode's first in an incremental read), COMMIT's. */
function build(results: pg.QueryResult[], version: number, base?: Catalog): Catalog {
  const extra = base ? 1 : 0;
  if (!Array.isArray(results) || results.length !== RESULT.count + 2 + extra) {
    throw new Error(`catalog read returned ${Array.isArray(results) ? results.length : 1} results`);
  }
  return buildCatalog(results.slice(1 + extra, -1), version, base);
}

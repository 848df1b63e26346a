// Runs a tool's SQL on a pooled proxy connection: reads in a READ ONLY transaction with a row cap, writes, EXPLAIN.
import type pg from 'pg';
import type { McpIdentity } from './api-key-auth.js';
import type { PoolEntry, ProxyPools } from './proxy-pools.js';
import { statementShape } from './statement-shape.js';

/** A parameter value as a tool takes it: sent as text, typed by the server ($1, $2, …). */
export type SqlParam = string | number | boolean | null;

/** One result column: its name and the pg_type OID the proxy reported (25, text, for a masked one). */
export interface ResultColumn {
  readonly name: string;
  readonly type_oid: number;
}

/** Rows a tool hands back, keyed by column name (a repeated name gets `_2`, `_3`, … in order). */
export interface RowsResult {
  readonly command: string;
  readonly columns: readonly ResultColumn[];
  readonly rows: readonly Record<string, unknown>[];
  /** Rows returned (after the cap). */
  readonly row_count: number;
  /** True when the statement had more rows than the cap. */
  readonly truncated: boolean;
}

/** The default and largest row cap of execute_query (issue 10: "rows capped (default 250)"). */
export const DEFAULT_MAX_ROWS = 250;
export const MAX_MAX_ROWS = 10_000;

/** The cursor execute_query reads through; DISCARD ALL closes it before the next checkout anyway. */
const CURSOR = 'pgwarden_mcp_rows';

function extended(text: string, params: readonly SqlParam[] = []): pg.QueryArrayConfig {
  // Extended protocol always: one statement per Parse, so a `;` cannot smuggle a second statement
  // (e.g. a COMMIT ending the READ ONLY transaction) past the wrapper.
  return {
    text,
    values: params.map((p) => (p === null ? null : String(p))),
    rowMode: 'array',
    queryMode: 'extended',
  } as pg.QueryArrayConfig;
}

function uniqueNames(fields: readonly pg.FieldDef[]): string[] {
  const seen = new Map<string, number>();
  return fields.map((f) => {
    const n = (seen.get(f.name) ?? 0) + 1;
    seen.set(f.name, n);
    return n === 1 ? f.name : `${f.name}_${n}`;
  });
}

function toRows(result: pg.QueryArrayResult, cap: number): RowsResult {
  const fields = result.fields ?? [];
  const names = uniqueNames(fields);
  const all = result.rows ?? [];
  const kept = all.slice(0, cap);
  return {
    command: result.command ?? '',
    columns: fields.map((f, i) => ({ name: names[i]!, type_oid: f.dataTypeID })),
    rows: kept.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i] ?? null]))),
    row_count: kept.length,
    truncated: all.length > cap,
  };
}

/**
 * Runs `work` on a connection for `identity` to `database` taken from `pools` (reset with DISCARD
 * ALL). After `work`, an open transaction is rolled back; a connection whose rollback fails is
 * dropped rather than pooled. Errors from `work` propagate (the proxy's ErrorResponse as pg raises it).
 */
export async function withConnection<T>(
  pools: ProxyPools,
  database: string,
  identity: McpIdentity,
  work: (client: pg.PoolClient, entry: PoolEntry) => Promise<T>,
): Promise<T> {
  const { client, entry } = await pools.acquire(database, identity);
  let broken = false;
  try {
    return await work(client, entry);
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {
      broken = true;
    });
    throw e;
  } finally {
    client.release(broken);
  }
}

async function serverVersionNum(client: pg.PoolClient, entry: PoolEntry): Promise<number> {
  if (entry.serverVersionNum === undefined) {
    const r = await client.query<{ server_version_num: string }>('SHOW server_version_num');
    entry.serverVersionNum = Number(r.rows[0]?.server_version_num);
  }
  return entry.serverVersionNum;
}

/**
 * execute_query: runs one statement in a `BEGIN READ ONLY` transaction that is rolled back, so a
 * write is refused by the proxy (no INSERT/UPDATE/DELETE/MANAGE in the roles: 42501) or by
 * PostgreSQL (25006 read_only_sql_transaction) and nothing persists. A plain SELECT runs as
 * `DECLARE … NO SCROLL CURSOR FOR <sql>` then `FETCH FORWARD max_rows+1`, so at most one row past
 * the cap crosses the wire (the proxy decides a DECLARE by the query it holds and masks the FETCH);
 * any other statement (SHOW, a parse error for the proxy to report) runs as is and is capped here.
 * Output: the rows, masked columns as `*****`; `truncated` when there were more than `maxRows`.
 * Errors: the proxy's ErrorResponse (pg DatabaseError), or ToolFailure 42601 for no or several statements.
 */
export async function runReadQuery(
  client: pg.PoolClient,
  entry: PoolEntry,
  sql: string,
  params: readonly SqlParam[] | undefined,
  maxRows: number,
): Promise<RowsResult> {
  const shape = await statementShape(sql, await serverVersionNum(client, entry));
  await client.query('BEGIN READ ONLY');
  let result: pg.QueryArrayResult;
  if (shape.cursorable) {
    await client.query(extended(`DECLARE ${CURSOR} NO SCROLL CURSOR FOR ${shape.text}`, params));
    result = await client.query(extended(`FETCH FORWARD ${maxRows + 1} FROM ${CURSOR}`));
    result.command = 'SELECT';
  } else {
    result = await client.query(extended(shape.text, params));
  }
  await client.query('ROLLBACK');
  return toRows(result, maxRows);
}

/**
 * execute_statement: runs one statement as is (autocommit), decided by the proxy like any other:
 * refused (42501) unless the roles grant what it needs. Output: the command tag's verb, the rows it
 * returned (RETURNING, masked like any rows, capped at {@link DEFAULT_MAX_ROWS}) and `affected`
 * (the tag's row count). Errors: the proxy's ErrorResponse, or ToolFailure 42601 for no or several statements.
 */
export async function runStatement(
  client: pg.PoolClient,
  entry: PoolEntry,
  sql: string,
  params: readonly SqlParam[] | undefined,
): Promise<RowsResult & { readonly affected: number | null }> {
  const shape = await statementShape(sql, await serverVersionNum(client, entry));
  const result = await client.query(extended(shape.text, params));
  return { ...toRows(result, DEFAULT_MAX_ROWS), affected: result.rowCount ?? null };
}

/**
 * explain_query: `EXPLAIN <sql>`, or `EXPLAIN (ANALYZE) <sql>` when `analyze` is set, in a READ ONLY
 * transaction that is rolled back (so EXPLAIN ANALYZE of a write is refused, 25006, rather than
 * performed). The proxy decides EXPLAIN like the statement it explains. Output: the plan's lines.
 * Errors: the proxy's ErrorResponse, or ToolFailure 42601 for no or several statements.
 */
export async function runExplain(
  client: pg.PoolClient,
  entry: PoolEntry,
  sql: string,
  params: readonly SqlParam[] | undefined,
  analyze: boolean,
): Promise<string[]> {
  const shape = await statementShape(sql, await serverVersionNum(client, entry));
  await client.query('BEGIN READ ONLY');
  const result = await client.query(extended(`EXPLAIN ${analyze ? '(ANALYZE) ' : ''}${shape.text}`, params));
  await client.query('ROLLBACK');
  return result.rows.map((r) => String(r[0]));
}

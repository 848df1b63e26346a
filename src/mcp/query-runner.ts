// Runs a tool's SQL on a pooled proxy connection: reads in a READ ONLY transaction with a row cap, writes, EXPLAIN.
import pg from 'pg';
import type { McpIdentity } from './api-key-auth.js';
import type { PoolEntry, ProxyPools } from './proxy-pools.js';
import { statementShape } from './statement-shape.js';
import { ToolFailure } from './tool-errors.js';

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

/**
 * The most a tool's rows may take (bytes, as the answer's JSON objects); rows past it are left out
 * and the result is `truncated`. Without it an agent's `SELECT repeat('x', 10000000) FROM
 * generate_series(1, 10000)` with max_rows 10 000 had the MCP server hold 100 GB of rows (attack:
 * the process runs out of memory, and every agent's session with it). 4 MiB: an answer carries the
 * rows twice (structured content and text), and the MCP SDK's stdio reader closes the connection
 * on a message over 10 MiB (STDIO_DEFAULT_MAX_BUFFER_SIZE).
 */
export const MAX_RESULT_BYTES = 4 << 20;

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

/** Rows kept so far across the queries of one tool call, against its caps. */
interface Kept {
  readonly rows: unknown[][];
  bytes: number;
  /** A row was left out (over `maxRows` or {@link MAX_RESULT_BYTES}). */
  dropped: boolean;
}

/**
 * A query whose Execute asks for at most `limit` rows and is followed by its Sync at once: one round
 * trip, and rows past the limit never cross the wire (the portal stops, PortalSuspended, and the
 * Sync closes it outside a transaction block). node-pg's own `rows` option would ask for more
 * rows in further round trips, and is refused on a pipelined connection; this is a plain Query
 * there (node-pg 8.23: `_getRows` writes the Execute, `handlePortalSuspended` asks for more).
 * Protocol: "Extended Query" (Execute's row limit). The command tag of a stopped portal is empty.
 */
class LimitedQuery extends pg.Query {
  constructor(
    config: pg.QueryArrayConfig,
    private readonly limit: number,
  ) {
    super(config);
  }

  _getRows(connection: { execute(o: { portal?: string; rows: number }): void; sync(): void }): void {
    connection.execute({ portal: (this as unknown as { portal?: string }).portal ?? '', rows: this.limit });
    connection.sync();
  }

  handlePortalSuspended(): void {}
}

/**
 * Runs `config` on `client` keeping at most `maxRows - kept.rows.length` more rows and at most
 * {@link MAX_RESULT_BYTES} in all (each row counted as its JSON object's length); rows past either cap are
 * parsed one at a time and dropped (node-pg keeps no rows when a query has a 'row' listener and
 * no callback). Output: the command tag, fields and row count; `kept` gains the rows.
 * Rejects with the server's error.
 */
function cappedQuery(
  client: pg.ClientBase,
  config: pg.QueryArrayConfig,
  maxRows: number,
  kept: Kept,
  executeLimit?: number,
): Promise<{ command: string; fields: pg.FieldDef[]; rowCount: number | null; rows: number }> {
  const q = executeLimit === undefined ? new pg.Query(config) : new LimitedQuery(config, executeLimit);
  let rows = 0;
  /** The JSON of a row's names: `"name":` and a comma per column, and the braces. */
  let namesBytes: number | undefined;
  q.on('row', (row: unknown[], result?: { fields?: pg.FieldDef[] }) => {
    rows++;
    if (kept.dropped || kept.rows.length >= maxRows) {
      kept.dropped = true;
      return;
    }
    namesBytes ??= (result?.fields ?? []).reduce((n, f) => n + JSON.stringify(f.name).length + 2, 2);
    const bytes = (JSON.stringify(row)?.length ?? 0) + namesBytes;
    if (kept.bytes + bytes > MAX_RESULT_BYTES) {
      kept.dropped = true;
      return;
    }
    kept.bytes += bytes;
    kept.rows.push(row);
  });
  return new Promise((resolve, reject) => {
    q.on('error', reject);
    q.on('end', (result: pg.QueryArrayResult) => {
      resolve({
        command: result.command ?? '',
        fields: result.fields ?? [],
        rowCount: result.rowCount,
        rows,
      });
    });
    client.query(q);
  });
}

function toRows(command: string, fields: readonly pg.FieldDef[], kept: Kept): RowsResult {
  const names = uniqueNames(fields);
  return {
    command,
    columns: fields.map((f, i) => ({ name: names[i]!, type_oid: f.dataTypeID })),
    rows: kept.rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r[i] ?? null]))),
    row_count: kept.rows.length,
    truncated: kept.dropped,
  };
}

/** How a tool uses its connection ({@link withConnection}). */
export interface ConnectionUse {
  /** The call's cancellation (the MCP client cancelled it, or its HTTP request went away). */
  readonly signal?: AbortSignal;
  /** `work` runs only pgwarden's own statements that change nothing of the session, or none. */
  readonly leavesNoState?: boolean;
  /** From the key's read pool: every transaction READ ONLY (ProxyPools). */
  readonly readOnly?: boolean;
}

/**
 * Runs `work` on a connection for `identity` to `database` taken from `pools` (in a fresh session's
 * state: see ProxyPools.giveBack). After `work` the connection is handed back without waiting:
 * after a failure or with a transaction still open its transaction is rolled back, then DISCARD ALL resets it before it is pooled
 * again, and a connection whose reset fails is dropped. When `signal` aborts while `work` runs (the MCP client cancelled the
 * call, or its HTTP request went away), the running statement is canceled with a CancelRequest, so
 * nothing keeps running upstream for a caller who left; `work` then rejects with 57014
 * query_canceled and the connection is dropped. `leavesNoState`: `work` runs only pgwarden's own
 * statements that change nothing of the session (describe_table's reads) or none (list_tables), so
 * after it succeeds the connection goes back as it came, without DISCARD ALL. Errors from `work`
 * propagate (the proxy's ErrorResponse as pg raises it).
 */
export async function withConnection<T>(
  pools: ProxyPools,
  database: string,
  identity: McpIdentity,
  work: (client: pg.PoolClient, entry: PoolEntry) => Promise<T>,
  opts: ConnectionUse = {},
): Promise<T> {
  const { signal, leavesNoState = false, readOnly = false } = opts;
  signal?.throwIfAborted();
  const { client, entry } = await pools.acquire(database, identity, readOnly);
  let broken = false;
  let cancel: Promise<void> | undefined;
  const onAbort = () => {
    broken = true;
    cancel = pools.cancel(client);
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  let failed = false;
  try {
    return await work(client, entry);
  } catch (e) {
    failed = true;
    await cancel;
    throw e;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    if (broken) client.release(true);
    else if (leavesNoState && !failed) client.release();
    // A transaction left open (the status of the last ReadyForQuery) is rolled back too: attack,
    // execute_statement 'BEGIN' pooled a connection inside one, and the next call taking it (any
    // agent with the key) failed 25001 at its DISCARD ALL.
    else void pools.giveBack(client, failed || client.getTransactionStatus() !== 'I');
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
 * execute_query: runs one statement on a connection of the key's read pool, where every
 * transaction is READ ONLY (ProxyPools: `default_transaction_read_only=on` at login, kept by
 * DISCARD ALL), so a write is refused by the proxy (no INSERT/UPDATE/DELETE/MANAGE in the roles:
 * 42501) or by PostgreSQL (25006 read_only_sql_transaction) and nothing persists. One round trip:
 * Parse, Bind, Describe, Execute with a row limit of `maxRows` + 1, Sync (the proxy decides the
 * statement at Parse, masks its rows and audits the Execute); at most one row past the cap crosses
 * the wire, and rows past {@link MAX_RESULT_BYTES} are read and dropped. Output: the rows, masked
 * columns as `*****`; `truncated` when there were more than `maxRows` or they took more than
 * MAX_RESULT_BYTES. Errors: the proxy's ErrorResponse (pg DatabaseError), or ToolFailure 42601 for
 * no or several statements.
 */
export async function runReadQuery(
  client: pg.PoolClient,
  entry: PoolEntry,
  sql: string,
  params: readonly SqlParam[] | undefined,
  maxRows: number,
): Promise<RowsResult> {
  const shape = await statementShape(sql, await serverVersionNum(client, entry));
  const kept: Kept = { rows: [], bytes: 0, dropped: false };
  const out = await cappedQuery(client, extended(shape.text, params), maxRows, kept, maxRows + 1);
  // A portal stopped at its limit has no command tag: only a row-returning statement stops.
  return toRows(out.command || 'SELECT', out.fields, kept);
}

/**
 * execute_statement: runs one statement as is (autocommit), decided by the proxy like any other:
 * refused (42501) unless the roles grant what it needs. Output: the command tag's verb, the rows it
 * returned (RETURNING, masked like any rows, capped at {@link DEFAULT_MAX_ROWS} and
 * {@link MAX_RESULT_BYTES}: the rest are read and dropped) and `affected`
 * (the tag's row count). Errors: the proxy's ErrorResponse, ToolFailure 42601 for no or several
 * statements, ToolFailure 0A000 for transaction control (a pooled connection goes back idle).
 */
export async function runStatement(
  client: pg.PoolClient,
  entry: PoolEntry,
  sql: string,
  params: readonly SqlParam[] | undefined,
): Promise<RowsResult & { readonly affected: number | null }> {
  const shape = await statementShape(sql, await serverVersionNum(client, entry));
  if (shape.nodeType === 'TransactionStmt')
    throw new ToolFailure(
      '0A000',
      'execute_statement runs each statement in a transaction of its own: transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, …) has nothing to act on',
      undefined,
      'Run the statement alone; it is committed when it succeeds.',
    );
  const kept: Kept = { rows: [], bytes: 0, dropped: false };
  const r = await cappedQuery(client, extended(shape.text, params), DEFAULT_MAX_ROWS, kept);
  return { ...toRows(r.command, r.fields, kept), affected: r.rowCount ?? null };
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
  // EXPLAIN goes out only once BEGIN READ ONLY took effect (EXPLAIN ANALYZE of a write would commit outside it).
  await client.query('BEGIN READ ONLY');
  const [result] = await Promise.all([
    client.query(extended(`EXPLAIN ${analyze ? '(ANALYZE) ' : ''}${shape.text}`, params)),
    client.query('ROLLBACK'),
  ]);
  return result.rows.map((r) => String(r[0]));
}

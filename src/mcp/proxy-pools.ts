// Connections from the MCP tools to the proxy's own listener, pooled per (database, API key), reset on checkout.
import crypto from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import type { Logger } from 'pino';
import type { McpIdentity } from './api-key-auth.js';
import { ToolFailure } from './tool-errors.js';

/** pg_type OIDs whose values read naturally as JSON numbers, booleans, documents (or arrays of those and of text); the rest stay text. */
const PARSED_TYPES: ReadonlySet<number> = new Set([
  16, // bool
  21, // int2
  23, // int4
  26, // oid
  114, // json
  700, // float4
  701, // float8
  3802, // jsonb
  199, // json[]
  1000, // bool[]
  1005, // int2[]
  1007, // int4[]
  1009, // text[]
  1015, // varchar[]
  1021, // float4[]
  1022, // float8[]
  1028, // oid[]
  3807, // jsonb[]
]);

/**
 * Type parsers for the tools' connections: booleans, 2- and 4-byte integers, OIDs, floats, JSON and
 * arrays of those or of text are parsed (readCatalog needs the text[] and oid values parsed); everything else (int8 and numeric, which JSON numbers would round; dates and times, which
 * Date would shift into the local zone; bytea) stays the server's text. A masked cell is always the
 * text `*****` (the proxy retypes masked columns as text), so it is never parsed.
 */
const TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (PARSED_TYPES.has(oid)) return pg.types.getTypeParser(oid, format ?? 'text');
    return (value: string) => value;
  },
} as pg.CustomTypesConfig;

/** How long a checkout waits by default (ms): `limits.mcp_pool_wait_ms`'s default. */
const DEFAULT_WAIT_MS = 10_000;

/** Options of {@link ProxyPools}. */
export interface ProxyPoolsOptions {
  /** Where the proxy's internal `mcp` listener is. */
  readonly host: string;
  readonly port: number;
  /** Connections per (database, key); 4 by default. */
  readonly max?: number;
  /** How long an idle pooled connection stays open, ms; 30 s by default. */
  readonly idleMs?: number;
  /** statement_timeout of the pooled sessions (ms, a startup parameter, so DISCARD ALL keeps it); 0: none. */
  readonly statementTimeoutMs?: number;
  /** How long `acquire` waits for a free connection or a new login (ms, pg-pool's connectionTimeoutMillis); 10 s by default. */
  readonly waitMs?: number;
  readonly logger: Logger;
}

/** One pool, and what is learnt once per pool. */
export interface PoolEntry {
  readonly pool: pg.Pool;
  /** server_version_num of the upstream, read once per pool (the parser major for statement shapes). */
  serverVersionNum?: number;
}

/**
 * Pools of `pg` connections to the proxy's internal listener, one pool per (database, key id, token,
 * read only or not; a read pool's sessions log in with `default_transaction_read_only=on`):
 * every connection logs in over SCRAM as the key (user = key id, password = token), so every statement
 * a tool runs goes through the proxy's session code — role resolution, the unruled-database refusal at
 * connect, analysis, decision, masking, error redaction and the proxy's audit line. Each checkout runs
 * `DISCARD ALL` first, so nothing one call set (search_path, prepared statements, cursors, temporary
 * tables) carries into the next (issue 10). Source: issue 10, "pooled per (database, resolved
 * identity) and reset with DISCARD ALL each time one is taken".
 */
export class ProxyPools {
  private readonly pools = new Map<string, PoolEntry>();

  constructor(private readonly opts: ProxyPoolsOptions) {}

  /**
   * A connection for `identity` to `database` in a fresh session's state: a new login, or a pooled
   * connection that {@link giveBack} reset with `DISCARD ALL` before it went back to the pool; with
   * `readOnly`, from the key's read pool, where every transaction is READ ONLY. The
   * caller hands it back with {@link giveBack} (or `release(true)` to drop a connection left in an
   * unknown state). Rejects with the proxy's own error when the connection is refused (pg DatabaseError with `code`:
   * 28P01 bad token, 3D000 unknown database, 42501 a database no role mentions, 28000 no role), with
   * ToolFailure 53300 when no connection came free within `waitMs`, or with a connection error when
   * the listener is gone.
   */
  async acquire(
    database: string,
    identity: McpIdentity,
    readOnly = false,
  ): Promise<{ client: pg.PoolClient; entry: PoolEntry }> {
    const entry = this.entryFor(database, identity, readOnly);
    let client: pg.PoolClient;
    try {
      client = await entry.pool.connect();
    } catch (e) {
      // pg-pool's own wait ran out: every connection of this key busy (or the listener slow).
      if (/timeout exceeded when trying to connect/.test((e as Error).message))
        throw new ToolFailure(
          '53300',
          `every pooled connection of API key "${identity.keyId}" to database "${database}" stayed busy for ${this.opts.waitMs ?? DEFAULT_WAIT_MS} ms`,
          undefined,
          "Wait for the key's running tool calls to end, or cancel them.",
        );
      throw e;
    }
    return { client, entry };
  }

  /**
   * Hands `client` back: `ROLLBACK` when `inTransaction` (an open or failed transaction: DISCARD ALL
   * cannot run in one), then `DISCARD ALL`, and only then back to the pool, so nothing one call set
   * (search_path, prepared statements, cursors, temporary tables, advisory locks) reaches the next
   * checkout; a connection whose reset fails is dropped. The reset runs after the call has its
   * answer (the connections pipeline, so it is written behind the call's last statement) and is off
   * the call's latency. Never rejects.
   */
  giveBack(client: pg.PoolClient, inTransaction: boolean): Promise<void> {
    const rollback = inTransaction ? client.query('ROLLBACK') : undefined;
    const discard = client.query('DISCARD ALL');
    return Promise.all([rollback, discard]).then(
      () => client.release(),
      () => client.release(true),
    );
  }

  /**
   * Sends a CancelRequest (protocol "Canceling Requests in Progress": length 16, code 80877102, the
   * session's BackendKeyData) for `client`'s session to the proxy's listener, which cancels its
   * running upstream statement as for any client. Resolves when the request is written and the
   * listener closed the connection (or after 2 s); never rejects: a cancel is best effort.
   */
  cancel(client: pg.PoolClient): Promise<void> {
    const { processID, secretKey } = client as unknown as { processID?: number; secretKey?: number };
    if (processID === undefined || secretKey === undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const packet = Buffer.alloc(16);
      packet.writeInt32BE(16, 0);
      packet.writeInt32BE(80877102, 4);
      packet.writeInt32BE(processID, 8);
      packet.writeInt32BE(secretKey, 12);
      const socket = net.connect(this.opts.port, this.opts.host, () => socket.end(packet));
      const done = () => {
        clearTimeout(timer);
        socket.destroy();
        resolve();
      };
      const timer = setTimeout(done, 2000);
      socket.on('close', done);
      socket.on('error', done);
    });
  }

  /** Closes every pool (after a reload: pooled sessions keep the config they logged in under). */
  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.pool.end().catch(() => undefined)));
  }

  private entryFor(database: string, identity: McpIdentity, readOnly: boolean): PoolEntry {
    const tokenHash = crypto.createHash('sha256').update(identity.token, 'utf8').digest('hex');
    const key = `${database}\0${identity.keyId}\0${tokenHash}\0${readOnly ? 'r' : 'w'}`;
    const existing = this.pools.get(key);
    if (existing) return existing;
    const pool = new pg.Pool({
      host: this.opts.host,
      port: this.opts.port,
      user: identity.keyId,
      password: identity.token,
      database,
      max: this.opts.max ?? 4,
      idleTimeoutMillis: this.opts.idleMs ?? 30_000,
      application_name: 'pgwarden-mcp',
      connectionTimeoutMillis: this.opts.waitMs ?? DEFAULT_WAIT_MS,
      ...(this.opts.statementTimeoutMs ? { statement_timeout: this.opts.statementTimeoutMs } : {}),
      types: TYPES,
      // Every transaction of a read pool's sessions is READ ONLY, the implicit one of a lone
      // statement included: a startup parameter, so DISCARD ALL (RESET ALL) keeps it.
      ...(readOnly ? { options: '-c default_transaction_read_only=on' } : {}),
      // Statements are written without waiting for the one before (each with its own Sync, so an
      // error ends only its own statement): a tool's BEGIN, DECLARE, FETCH and ROLLBACK, and the
      // DISCARD ALL behind them, go out in one write (issue 18).
      pipeline: true,
    });
    // An idle connection the proxy closes (shutdown, revoked key) must not crash the process.
    pool.on('error', (e) =>
      this.opts.logger.debug(
        { event: 'mcp-pool-error', err: e.message, database },
        'pooled connection error',
      ),
    );
    const entry: PoolEntry = { pool };
    this.pools.set(key, entry);
    return entry;
  }
}

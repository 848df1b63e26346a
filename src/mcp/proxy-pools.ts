// Connections from the MCP tools to the proxy's own listener, pooled per (database, API key), reset on checkout.
import crypto from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import type { McpIdentity } from './api-key-auth.js';

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

/** Options of {@link ProxyPools}. */
export interface ProxyPoolsOptions {
  /** Where the proxy's internal `mcp` listener is. */
  readonly host: string;
  readonly port: number;
  /** Connections per (database, key); 4 by default. */
  readonly max?: number;
  /** How long an idle pooled connection stays open, ms; 30 s by default. */
  readonly idleMs?: number;
  readonly logger: Logger;
}

/** One pool, and what is learnt once per pool. */
export interface PoolEntry {
  readonly pool: pg.Pool;
  /** server_version_num of the upstream, read once per pool (the parser major for statement shapes). */
  serverVersionNum?: number;
}

/**
 * Pools of `pg` connections to the proxy's internal listener, one pool per (database, key id, token):
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
   * A connection for `identity` to `database`, reset with `DISCARD ALL`. The caller must
   * `release()` it (or `release(true)` after an error, to drop a connection left in an unknown state).
   * Rejects with the proxy's own error when the connection is refused (pg DatabaseError with `code`:
   * 28P01 bad token, 3D000 unknown database, 42501 a database no role mentions, 28000 no role), or
   * with a connection error when the listener is gone.
   */
  async acquire(
    database: string,
    identity: McpIdentity,
  ): Promise<{ client: pg.PoolClient; entry: PoolEntry }> {
    const entry = this.entryFor(database, identity);
    const client = await entry.pool.connect();
    try {
      await client.query('DISCARD ALL');
    } catch (e) {
      client.release(true);
      throw e;
    }
    return { client, entry };
  }

  /** Closes every pool (after a reload: pooled sessions keep the config they logged in under). */
  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.pool.end().catch(() => undefined)));
  }

  private entryFor(database: string, identity: McpIdentity): PoolEntry {
    const tokenHash = crypto.createHash('sha256').update(identity.token, 'utf8').digest('hex');
    const key = `${database}\0${identity.keyId}\0${tokenHash}`;
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
      types: TYPES,
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

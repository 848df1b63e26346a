// The long-lived catalog connection of one database: its timeouts, opening it, and what a failed read is answered and logged with.
import pg from 'pg';
import type { Logger } from 'pino';

/** Timeouts of the catalog connection (ms). */
export interface CatalogTimeouts {
  /** Opening the catalog connection (default 5000). */
  readonly connectMs: number;
  /** `lock_timeout` of the catalog reads: they never queue behind another session's lock for longer (default 200). */
  readonly lockMs: number;
  /** `statement_timeout` of the catalog reads (default 15000). */
  readonly statementMs: number;
}

export const DEFAULT_TIMEOUTS: CatalogTimeouts = { connectMs: 5000, lockMs: 200, statementMs: 15_000 };

/** Backoff between failed reads (and between reads of views left pending by a lock): from 100 ms doubling up to 5 s. */
export function backoff(failures: number): number {
  return Math.min(5000, 100 * 2 ** Math.min(failures, 10));
}

/** SQLSTATEs of a server that is not accepting this connection now (PostgreSQL's own at connect). */
export const CANNOT_CONNECT = new Set(['57P03', '53300', '57P01', '57P02', '08006', '08001', '08004']);

/**
 * The catalog of a database cannot be read now. `sqlstate` is what a session answers a statement
 * with (issue 16: never 08xxx at ERROR severity): 57P03 cannot_connect_now when the upstream does
 * not accept the catalog connection, 58000 system_error when a read failed or timed out. The
 * message names neither the upstream host nor its address (they go to the log).
 */
export class CatalogUnavailable extends Error {
  readonly sqlstate: '57P03' | '58000';
  constructor(sqlstate: '57P03' | '58000', message: string) {
    super(message);
    this.sqlstate = sqlstate;
  }
}

/** One database's catalog connection: opened on first use and again after it broke. */
export class CatalogConnection {
  private conn: Promise<pg.Client> | undefined;
  /** A connection being opened (not yet answered): the upstream may not be accepting connections. */
  private opening: Promise<pg.Client> | undefined;

  /**
   * @param url the upstream: its URL, or a `pg` client config carrying the database's TLS
   * @param timeouts of the connection and of every statement on it
   */
  constructor(
    private readonly url: string | pg.ClientConfig,
    private readonly timeouts: CatalogTimeouts,
  ) {}

  /** Whether the connection is being opened now (not yet answered). */
  get isOpening(): boolean {
    return this.opening !== undefined && this.opening === this.conn;
  }

  /** The connection, opened when there is none; rejects with pg's error, marked `connecting`. */
  client(): Promise<pg.Client> {
    if (this.conn) return this.conn;
    const client = new pg.Client({
      ...(typeof this.url === 'string' ? { connectionString: this.url } : this.url),
      connectionTimeoutMillis: this.timeouts.connectMs,
      lock_timeout: this.timeouts.lockMs,
      statement_timeout: this.timeouts.statementMs,
      query_timeout: this.timeouts.statementMs + 1000,
      application_name: 'pgwarden catalog',
    });
    const conn: Promise<pg.Client> = client.connect().then(
      () => client,
      (e: unknown) => {
        if (this.conn === conn) this.conn = undefined;
        throw Object.assign(e as Error, { connecting: true });
      },
    );
    const lost = () => {
      if (this.conn === conn) this.conn = undefined;
    };
    client.on('error', lost);
    client.on('end', lost);
    this.conn = conn;
    this.opening = conn;
    const opened = () => {
      if (this.opening === conn) this.opening = undefined;
    };
    conn.then(opened, opened);
    return conn;
  }

  /** Ends the connection; the next use opens another. */
  drop(): Promise<void> {
    const conn = this.conn;
    this.conn = undefined;
    return conn?.then((c) => c.end()).catch(() => undefined) ?? Promise.resolve();
  }

  /**
   * The CatalogUnavailable for a failed read of `database` (`e`: pg's error), logged when `log`
   * is given (once per failure streak, the caller decides) with the relation locks the read may
   * have waited on (lock_timeout 55P03, statement_timeout 57014).
   */
  async failure(database: string, e: unknown, log: Logger | undefined): Promise<CatalogUnavailable> {
    const code = (e as { code?: string }).code;
    const connecting = (e as { connecting?: boolean }).connecting === true;
    const cannotConnect = connecting || (code !== undefined && CANNOT_CONNECT.has(code));
    if (log) {
      const locks = code === '55P03' || code === '57014' ? await this.locksHeld() : undefined;
      log.error(
        {
          event: 'catalog-failed',
          database,
          code,
          err: (e as Error).message,
          ...(locks ? { waited_on: locks } : {}),
        },
        'cannot read the upstream catalog; retrying with backoff',
      );
    }
    return cannotConnect
      ? new CatalogUnavailable(
          '57P03',
          `pgwarden cannot read the catalog of database "${database}" now: the upstream is not accepting connections`,
        )
      : new CatalogUnavailable(
          '58000',
          `pgwarden could not read the catalog of database "${database}"${code === '55P03' ? ': another transaction holds a lock on it' : ''}`,
        );
  }

  /** Relation locks other sessions hold or wait for in the database (what a catalog read can wait on), for the log. */
  private async locksHeld(): Promise<string[] | undefined> {
    try {
      const client = await this.client();
      const r = await client.query<{ rel: string; pid: number; mode: string; granted: boolean }>(
        `SELECT l.relation::regclass::text AS rel, l.pid, l.mode, l.granted FROM pg_locks l
          WHERE l.locktype = 'relation' AND l.pid <> pg_backend_pid() AND l.mode = 'AccessExclusiveLock'
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      return r.rows.map((x) => `${x.rel} ${x.mode} ${x.granted ? 'held' : 'awaited'} by pid ${x.pid}`);
    } catch {
      return undefined;
    }
  }
}

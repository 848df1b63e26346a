// Gives sessions the current Catalog of their upstream database, read on one long-lived catalog connection per database.

import pg from 'pg';
import type { Logger } from 'pino';
import { catalogStamp, readCatalog } from '../catalog/read-catalog.js';
import type { Catalog } from '../catalog/types.js';
import { catalogRead } from '../ops/metrics.js';

/** Timeouts of the catalog connection (ms). */
export interface CatalogTimeouts {
  /** Opening the catalog connection (default 5000). */
  readonly connectMs: number;
  /** `lock_timeout` of the catalog reads: they never queue behind another session's lock for longer (default 200). */
  readonly lockMs: number;
  /** `statement_timeout` of the catalog reads (default 15000). */
  readonly statementMs: number;
}

const DEFAULT_TIMEOUTS: CatalogTimeouts = { connectMs: 5000, lockMs: 200, statementMs: 15_000 };
/** Backoff between failed reads (and between reads of views left pending by a lock): from 100 ms doubling up to 5 s. */
const BACKOFF_MIN_MS = 100;
const BACKOFF_MAX_MS = 5000;

/** SQLSTATEs of a server that is not accepting this connection now (PostgreSQL's own at connect). */
const CANNOT_CONNECT = new Set(['57P03', '53300', '57P01', '57P02', '08006', '08001', '08004']);

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

interface DbState {
  /** The upstream: its URL, or a `pg` client config carrying the database's TLS (see `pgClientConfig`). */
  url: string | pg.ClientConfig;
  /** The last catalog read successfully, kept while refreshes fail. */
  current?: Catalog;
  /** When `current` was read (ms since the epoch), and when the last full read was. */
  loadedAt: number;
  fullAt: number;
  /** A change is known since `current` was read (DDL through pgwarden, a forced refresh): it must not be served. */
  dirty: boolean;
  /** Bumped by every invalidation; a read keeps `dirty` cleared only if it started after the last one. */
  gen: number;
  /** `gen` at the last known change (`invalidate`; a `refresh` for an unknown name is none), and when `current`'s read started. */
  changeGen: number;
  loadedGen: number;
  flight?: { gen: number; promise: Promise<Catalog> };
  conn?: Promise<pg.Client>;
  /** A connection being opened (not yet answered): the upstream may not be accepting connections. */
  opening?: Promise<pg.Client>;
  version: number;
  failures: number;
  /** No read before this time after a failure (or before re-reading views left pending). */
  retryAt: number;
  lastError?: CatalogUnavailable;
  /** The current failure streak has been logged. */
  logged: boolean;
}

/**
 * One catalog per database, shared by every session of a proxy (keyed by the client-facing
 * database name), read on one long-lived upstream connection per database with the configured
 * URL (the same login the sessions use, so `defaultSearchPath` is what their sessions start with).
 *
 * Refresh points (issue 5 "Catalog freshness"): `invalidate` after DDL has committed, on an
 * unknown relation or column (`refresh`, at most once per `minAgeMs`), on a RowDescription that
 * disagrees with the analysis, and the TTL. A refresh after a change reads only what changed
 * (readCatalog with the current catalog as base); the TTL reads everything. An invalidation
 * starts the read at once, so the next statement finds it done or under way.
 *
 * Reads run with a short `lock_timeout` and never wait for a view whose tables another session
 * locks (readCatalog leaves it pending; it is read again after a backoff). A read that fails is
 * logged once per failure streak (with the relation locks it may have waited on), retried with
 * backoff (100 ms doubling to 5 s), and rejects with CatalogUnavailable; the last catalog stays
 * available through `last` and is served again by `get`/`peek` as long as no change is known.
 */
export class CatalogSource {
  private readonly dbs = new Map<string, DbState>();
  /** The readiness probe in flight per database ({@link probe}). */
  private readonly probes = new Map<
    string,
    Promise<{ catalog: boolean; upstream: boolean; error?: string }>
  >();
  /** Bumped by every invalidation: a session's own in-band catalog is stale once it moves. */
  private readonly generations = new Map<string, number>();
  private readonly timeouts: CatalogTimeouts;
  private closed = false;

  /**
   * @param ttlMs how long a catalog is served before it is read again in full, in milliseconds.
   * @param afterRead awaited after every read, before the new catalog is handed out (the grant sync
   * of `roles: managed`: a table made through pgwarden is granted before a statement can name it).
   * It must not reject.
   * @param log where read failures and recoveries are logged (once per failure streak).
   */
  constructor(
    private readonly ttlMs: number,
    private readonly afterRead?: (database: string, catalog: Catalog) => Promise<void>,
    private readonly log?: Logger,
    timeouts: Partial<CatalogTimeouts> = {},
  ) {
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...timeouts };
  }

  /** The invalidation count of `database` (DDL through pgwarden anywhere, refreshes). */
  generation(database: string): number {
    return this.generations.get(database) ?? 0;
  }

  private state(database: string, url?: string | pg.ClientConfig): DbState | undefined {
    let st = this.dbs.get(database);
    if (!st && url !== undefined) {
      st = {
        url,
        loadedAt: 0,
        fullAt: 0,
        dirty: false,
        gen: 0,
        changeGen: 0,
        loadedGen: 0,
        version: 0,
        failures: 0,
        retryAt: 0,
        logged: false,
      };
      this.dbs.set(database, st);
    }
    return st;
  }

  /**
   * The current catalog of `database` (upstream `url`): the loaded one while no change is known,
   * else a fresh read (shared with concurrent callers). Rejects with CatalogUnavailable when it
   * cannot be read (at once while a failed read's backoff runs).
   */
  get(database: string, url: string | pg.ClientConfig): Promise<Catalog> {
    const st = this.state(database, url) as DbState;
    const now = this.peek(database);
    if (now) return Promise.resolve(now);
    if (st.flight) {
      const f = st.flight;
      // A read that started before the last invalidation may miss the change: read once more after it.
      return f.gen === st.gen
        ? f.promise
        : f.promise.catch(() => undefined).then(() => this.get(database, url));
    }
    if (Date.now() < st.retryAt && st.lastError) return Promise.reject(st.lastError);
    return this.load(database, st);
  }

  /**
   * The loaded catalog of `database` while no change is known since it was read, without
   * waiting; undefined when it must be read first. Starts a read in the background when the TTL
   * has passed or views are pending (the loaded catalog is served meanwhile).
   */
  peek(database: string): Catalog | undefined {
    const st = this.dbs.get(database);
    if (!st?.current || st.dirty) return undefined;
    const pending = (catalogStamp(st.current)?.pending.size ?? 0) > 0;
    const due = Date.now() >= st.retryAt && (Date.now() - st.fullAt >= this.ttlMs || pending);
    if (due && !st.flight) this.load(database, st).catch(() => undefined);
    return st.current;
  }

  /** The last catalog read for `database`, even one a change or a failure has made stale; for fallbacks only. */
  last(database: string): Catalog | undefined {
    return this.dbs.get(database)?.current;
  }

  /**
   * The last catalog read for `database` when no change is known since (its only invalidations
   * since were refreshes asked for by unknown names), else undefined. Issue 16: while such a
   * refresh fails, a statement that names nothing unknown is analyzed with it, as it was before
   * the refresh was asked for; a statement that does name the unknown object still waits for a
   * read (and is refused with 57P03/58000 when that fails). Starts a read in the background when
   * the failure's backoff has run out.
   */
  lastUnchanged(database: string): Catalog | undefined {
    const st = this.dbs.get(database);
    if (!st?.current || st.loadedGen < st.changeGen) return undefined;
    if (st.dirty && !st.flight && Date.now() >= st.retryAt && !this.closed)
      this.load(database, st).catch(() => undefined);
    return st.current;
  }

  /**
   * Whether a refresh of `database` (a catalog was read before) waits for its catalog connection
   * to open (issue 16: a postmaster that does not answer new connections holds it up to
   * `connectMs`; a session then reads on its own healthy connection rather than wait). The first
   * read is waited for: sessions logging in at start do not each read the whole catalog.
   */
  connecting(database: string): boolean {
    const st = this.dbs.get(database);
    return st?.current !== undefined && st.opening !== undefined && st.opening === st.conn;
  }

  /** Whether the last read of `database` failed (a session then reads on its own connection instead of waiting). */
  failing(database: string): boolean {
    return (this.dbs.get(database)?.failures ?? 0) > 0;
  }

  /** Makes the next `get` read the catalog again (with a higher version), and starts that read now: a change is known. */
  invalidate(database: string): void {
    this.mark(database, true);
  }

  private mark(database: string, changed: boolean): void {
    this.generations.set(database, this.generation(database) + 1);
    const st = this.dbs.get(database);
    if (!st) return;
    st.gen++;
    if (changed) st.changeGen = st.gen;
    st.dirty = true;
    st.retryAt = 0;
    if (!st.flight && !this.closed) this.load(database, st).catch(() => undefined);
  }

  /**
   * Makes the next `get` read the catalog again, unless it was read less than `minAgeMs` ago:
   * a statement naming an unknown relation asks for a fresh catalog, and a stream of such
   * statements must not become a stream of catalog reads against the upstream. Returns whether
   * the catalog will be read again.
   */
  refresh(database: string, minAgeMs: number): boolean {
    const st = this.dbs.get(database);
    if (st && Date.now() - st.loadedAt < minAgeMs) return false;
    this.mark(database, false);
    return true;
  }

  /** Closes the catalog connections; later reads reject. */
  async close(): Promise<void> {
    this.closed = true;
    const conns = [...this.dbs.values()].map((st) => st.conn);
    this.dbs.clear();
    await Promise.all(conns.map((c) => c?.then((x) => x.end()).catch(() => undefined)));
  }

  private load(database: string, st: DbState): Promise<Catalog> {
    const gen = st.gen;
    const version = ++st.version;
    // Incremental on top of the current catalog, unless the TTL asks for a full read.
    const base = st.current && Date.now() - st.fullAt < this.ttlMs ? st.current : undefined;
    const started = performance.now();
    const kind = base ? 'incremental' : 'full';
    const promise = this.read(st, version, base).then(
      async (catalog) => {
        const ms = performance.now() - started;
        catalogRead(database, kind, true, ms);
        await this.afterRead?.(database, catalog);
        const at = Date.now();
        this.log?.debug(
          {
            event: 'catalog-read',
            database,
            version,
            incremental: base !== undefined,
            relations: catalog.relations.size,
            ms: Math.round(ms * 10) / 10,
          },
          'catalog read',
        );
        st.current = catalog;
        st.loadedGen = gen;
        st.loadedAt = at;
        if (!base) st.fullAt = at;
        if (st.gen === gen) st.dirty = false;
        if (st.logged) this.log?.info({ event: 'catalog-recovered', database }, 'catalog read again');
        st.logged = false;
        st.lastError = undefined;
        const pending = catalogStamp(catalog)?.pending;
        if (pending && pending.size > 0) {
          st.retryAt = at + backoff(st.failures++);
          this.log?.info(
            { event: 'catalog-view-pending', database, views: [...pending.values()] },
            'view definitions not read: another session locks what they read; read again later',
          );
        } else st.failures = 0;
        return catalog;
      },
      async (e: unknown) => {
        catalogRead(database, kind, false, performance.now() - started);
        const failure = await this.failure(database, st, e);
        st.lastError = failure;
        st.retryAt = Date.now() + backoff(st.failures++);
        throw failure;
      },
    );
    const flight = { gen, promise };
    st.flight = flight;
    const clear = () => {
      if (st.flight === flight) st.flight = undefined;
    };
    promise.then(clear, clear);
    return promise;
  }

  /**
   * Readiness (`/readyz`): whether `database`'s catalog has been read and its catalog connection
   * answers `SELECT 1` within `timeoutMs` (the connection is opened when needed, the catalog read
   * when none is loaded). Never rejects: `error` says what failed, without the upstream's address.
   * Concurrent calls for one database share one probe (its answer).
   */
  probe(
    database: string,
    url: string | pg.ClientConfig,
    timeoutMs: number,
  ): Promise<{ catalog: boolean; upstream: boolean; error?: string }> {
    // One probe in flight per database, shared by every caller meanwhile: /readyz is served
    // without a caller, and a probe each would queue a query each on the catalog connection
    // every session's catalog reads wait behind (1000 at once made probes time out).
    const running = this.probes.get(database);
    if (running) return running;
    const p = this.probeOnce(database, url, timeoutMs);
    this.probes.set(database, p);
    const clear = () => {
      if (this.probes.get(database) === p) this.probes.delete(database);
    };
    p.then(clear, clear);
    return p;
  }

  private async probeOnce(
    database: string,
    url: string | pg.ClientConfig,
    timeoutMs: number,
  ): Promise<{ catalog: boolean; upstream: boolean; error?: string }> {
    const st = this.state(database, url) as DbState;
    const within = <T>(p: Promise<T>): Promise<T> =>
      Promise.race([
        p,
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs).unref(),
        ),
      ]);
    let upstream = false;
    let error: string | undefined;
    try {
      const client = await within(this.connection(st));
      await within(client.query('SELECT 1'));
      upstream = true;
    } catch (e) {
      error =
        e instanceof CatalogUnavailable
          ? e.message
          : 'the upstream does not answer on the catalog connection';
    }
    if (!st.current && upstream) await within(this.get(database, url)).catch(() => undefined);
    const catalog = st.current !== undefined;
    if (!catalog && error === undefined) error = `the catalog of database "${database}" has not been read`;
    return { catalog, upstream, ...(error !== undefined ? { error } : {}) };
  }

  private async read(st: DbState, version: number, base: Catalog | undefined): Promise<Catalog> {
    if (this.closed) throw new CatalogUnavailable('57P03', 'the proxy is shutting down');
    const client = await this.connection(st);
    try {
      return await readCatalog(client, version, base);
    } catch (e) {
      // A broken connection is opened again on the next read.
      if (!(e as { code?: string }).code || CANNOT_CONNECT.has((e as { code: string }).code)) this.drop(st);
      throw e;
    }
  }

  private connection(st: DbState): Promise<pg.Client> {
    if (st.conn) return st.conn;
    const client = new pg.Client({
      ...(typeof st.url === 'string' ? { connectionString: st.url } : st.url),
      connectionTimeoutMillis: this.timeouts.connectMs,
      lock_timeout: this.timeouts.lockMs,
      statement_timeout: this.timeouts.statementMs,
      query_timeout: this.timeouts.statementMs + 1000,
      application_name: 'pgwarden catalog',
    });
    const conn: Promise<pg.Client> = client.connect().then(
      () => client,
      (e: unknown) => {
        if (st.conn === conn) st.conn = undefined;
        throw Object.assign(e as Error, { connecting: true });
      },
    );
    client.on('error', () => {
      if (st.conn === conn) st.conn = undefined;
    });
    client.on('end', () => {
      if (st.conn === conn) st.conn = undefined;
    });
    st.conn = conn;
    st.opening = conn;
    const opened = () => {
      if (st.opening === conn) st.opening = undefined;
    };
    conn.then(opened, opened);
    return conn;
  }

  private drop(st: DbState): void {
    const conn = st.conn;
    st.conn = undefined;
    conn?.then((c) => c.end()).catch(() => undefined);
  }

  /** The CatalogUnavailable for a failed read, logged once per failure streak with what the read may have waited on. */
  private async failure(database: string, st: DbState, e: unknown): Promise<CatalogUnavailable> {
    const code = (e as { code?: string }).code;
    const connecting = (e as { connecting?: boolean }).connecting === true;
    const cannotConnect = connecting || (code !== undefined && CANNOT_CONNECT.has(code));
    if (!st.logged) {
      st.logged = true;
      const locks = code === '55P03' || code === '57014' ? await this.locksHeld(st) : undefined;
      this.log?.error(
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
  private async locksHeld(st: DbState): Promise<string[] | undefined> {
    try {
      const client = await this.connection(st);
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

function backoff(failures: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(failures, 10));
}

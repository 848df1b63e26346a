// Gives sessions the current Catalog of their upstream database, read on one long-lived catalog connection per database.

import type pg from 'pg';
import type { Logger } from 'pino';
import { catalogStamp, readCatalog } from '../catalog/read-catalog.js';
import type { Catalog } from '../catalog/types.js';
import { catalogRead } from '../ops/metrics.js';
import {
  backoff,
  CANNOT_CONNECT,
  CatalogConnection,
  type CatalogTimeouts,
  CatalogUnavailable,
  DEFAULT_TIMEOUTS,
} from './catalog-connection.js';
import { CatalogProbes, type ProbeResult } from './catalog-probe.js';
import { CommitFence, LOCK_PROBE_SQL, type LockProbe } from './commit-fence.js';

export { type CatalogTimeouts, CatalogUnavailable } from './catalog-connection.js';

interface DbState {
  /** The catalog connection (the upstream's URL, or a `pg` client config carrying the database's TLS). */
  readonly conn: CatalogConnection;
  /** The last catalog read successfully, kept while refreshes fail. */
  current?: Catalog;
  /** The newest catalog whose after-read work (the grant sync of `roles: managed`) is done. */
  granted?: Catalog;
  /** The after-read work of the last read while it runs. */
  granting?: Promise<void>;
  /** The oldest version `granted` may have to be handed out: the first read after the last known change. */
  grantedFrom: number;
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
  /** The readiness probes in flight ({@link probe}). */
  private readonly probes = new CatalogProbes();
  /** Bumped by every invalidation: a session's own in-band catalog is stale once it moves. */
  private readonly generations = new Map<string, number>();
  private readonly timeouts: CatalogTimeouts;
  private closed = false;
  /** The commit fence of this process's sessions (commit-fence.ts). */
  readonly fence: CommitFence;

  /**
   * @param ttlMs how long a catalog is served before it is read again in full, in milliseconds.
   * @param afterRead run after every read (the grant sync of `roles: managed`). The new catalog is
   * handed out at once to callers that hold no grants of their own (`get`, `peek`: the url login's
   * sessions); callers whose statements need the grants it brings (`{ granted: true }`: a set
   * login's session) are handed it once that work is done, so a table made through pgwarden is
   * granted before such a statement can name it (issue 15). It must not reject.
   * @param log where read failures and recoveries are logged (once per failure streak).
   */
  constructor(
    private readonly ttlMs: number,
    private readonly afterRead?: (database: string, catalog: Catalog) => Promise<void>,
    private readonly log?: Logger,
    timeouts: Partial<CatalogTimeouts> = {},
  ) {
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...timeouts };
    this.fence = new CommitFence(log);
  }

  /** The invalidation count of `database` (DDL through pgwarden anywhere, refreshes). */
  generation(database: string): number {
    return this.generations.get(database) ?? 0;
  }

  private state(database: string, url?: string | pg.ClientConfig): DbState | undefined {
    let st = this.dbs.get(database);
    if (!st && url !== undefined) {
      st = {
        conn: new CatalogConnection(url, this.timeouts),
        grantedFrom: 0,
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
   * else a fresh read (shared with concurrent callers). With `granted`, one whose after-read work
   * (the grant sync) is done and that has every change known before it was read (it waits for that
   * work). Rejects with CatalogUnavailable when it cannot be read (at once while a failed read's
   * backoff runs).
   */
  async get(
    database: string,
    url: string | pg.ClientConfig,
    opts: { readonly granted?: boolean } = {},
  ): Promise<Catalog> {
    if (!opts.granted) return this.getRead(database, url);
    for (;;) {
      const now = this.peek(database, opts);
      if (now) return now;
      const read = await this.getRead(database, url);
      const granting = this.dbs.get(database)?.granting;
      if (!granting) return read;
      await granting;
    }
  }

  /**
   * The after-read work (grant sync) of `database` running now, or undefined: a statement of a url
   * login's session that may change the catalog waits for it (issue 15: its DDL must not race the
   * sync's GRANTs on the same catalog rows, which Postgres answers with "tuple concurrently updated").
   */
  syncing(database: string): Promise<void> | undefined {
    return this.dbs.get(database)?.granting;
  }

  /**
   * The current catalog of `database` while the after-read work (grant sync) that brings its
   * grants runs, with that work; undefined when there is none to wait for, or the catalog must be
   * read first. Issue 15: a set login's statement that reads nothing the sync may change is decided
   * with it without waiting (SessionCatalog.beforeGrants).
   */
  ungranted(database: string): { catalog: Catalog; synced: Promise<void> } | undefined {
    const st = this.dbs.get(database);
    if (!st?.current || st.dirty || !st.granting || st.current.version < st.grantedFrom) return undefined;
    if (st.granted === st.current) return undefined;
    return { catalog: st.current, synced: st.granting };
  }

  private getRead(database: string, url: string | pg.ClientConfig): Promise<Catalog> {
    const st = this.state(database, url) as DbState;
    const now = this.peek(database);
    if (now) return Promise.resolve(now);
    if (st.flight) {
      const f = st.flight;
      // A read that started before the last invalidation may miss the change: read once more after it.
      return f.gen === st.gen
        ? f.promise
        : f.promise.catch(() => undefined).then(() => this.getRead(database, url));
    }
    if (Date.now() < st.retryAt && st.lastError) return Promise.reject(st.lastError);
    return this.load(database, st);
  }

  /**
   * The loaded catalog of `database` while no change is known since it was read, without
   * waiting; undefined when it must be read first. Starts a read in the background when the TTL
   * has passed or views are pending (the loaded catalog is served meanwhile). With `granted`: the
   * newest catalog whose after-read work is done, if it has every change known before the last
   * read (a refresh on the TTL serves the one before it until its grant sync is done); undefined
   * while the sync after a known change runs.
   */
  peek(database: string, opts: { readonly granted?: boolean } = {}): Catalog | undefined {
    const st = this.dbs.get(database);
    if (!st?.current || st.dirty) return undefined;
    const pending = (catalogStamp(st.current)?.pending.size ?? 0) > 0;
    const due = Date.now() >= st.retryAt && (Date.now() - st.fullAt >= this.ttlMs || pending);
    if (due && !st.flight) this.load(database, st).catch(() => undefined);
    if (!opts.granted) return st.current;
    return st.granted && st.granted.version >= st.grantedFrom ? st.granted : undefined;
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
   * the failure's backoff has run out, also when it then returns undefined.
   */
  lastUnchanged(database: string): Catalog | undefined {
    const st = this.dbs.get(database);
    if (!st?.current) return undefined;
    // The read is started whether or not a change is known: sessions that then read in-band
    // never call get, and without this the shared catalog would stay failed while they can.
    if (st.dirty && !st.flight && Date.now() >= st.retryAt && !this.closed)
      this.load(database, st).catch(() => undefined);
    return st.loadedGen < st.changeGen ? undefined : st.current;
  }

  /**
   * Whether a refresh of `database` (a catalog was read before) waits for its catalog connection
   * to open (issue 16: a postmaster that does not answer new connections holds it up to
   * `connectMs`; a session then reads on its own healthy connection rather than wait). The first
   * read is waited for: sessions logging in at start do not each read the whole catalog.
   */
  connecting(database: string): boolean {
    const st = this.dbs.get(database);
    return st?.current !== undefined && st.conn.isOpening;
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
    await Promise.all(conns.map((c) => c.drop()));
  }

  private load(database: string, st: DbState): Promise<Catalog> {
    const gen = st.gen;
    const version = ++st.version;
    // A read after a known change (or the first): the grants of the catalogs before it are stale.
    if (st.dirty || !st.current) st.grantedFrom = version;
    // Incremental on top of the current catalog, unless the TTL asks for a full read.
    const base = st.current && Date.now() - st.fullAt < this.ttlMs ? st.current : undefined;
    const started = performance.now();
    const kind = base ? 'incremental' : 'full';
    const promise = this.read(st, version, base).then(
      async (catalog) => {
        const ms = performance.now() - started;
        catalogRead(database, kind, true, ms);
        this.grant(database, st, catalog);
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
        const failure = await st.conn.failure(database, e, st.logged ? undefined : this.log);
        st.logged = true;
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
   * Starts the after-read work for `catalog` (not awaited by the read: callers without grants of
   * their own use the catalog meanwhile); `granted` follows it once done. Syncs run one after
   * another, in the order of the reads (ManagedRoles queues them).
   */
  private grant(database: string, st: DbState, catalog: Catalog): void {
    if (!this.afterRead) {
      st.granted = catalog;
      return;
    }
    const afterRead = this.afterRead;
    // Started once the statements waiting for this read have gone on (their analysis runs first,
    // on the same event loop); callers that need its grants wait for `granting`, set now.
    const granting: Promise<void> = new Promise<void>((r) => setImmediate(r))
      .then(() => afterRead(database, catalog))
      .catch(() => undefined)
      .then(() => {
        if (!st.granted || catalog.version > st.granted.version) st.granted = catalog;
        if (st.granting === granting) st.granting = undefined;
      });
    st.granting = granting;
  }

  /**
   * Readiness (`/readyz`, catalog-probe.ts): whether `database`'s catalog has been read and its
   * catalog connection answers `SELECT 1` within `timeoutMs`. Never rejects. Concurrent calls for
   * one database share one probe (its answer).
   */
  probe(database: string, url: string | pg.ClientConfig, timeoutMs: number): Promise<ProbeResult> {
    const st = this.state(database, url) as DbState;
    const target = {
      conn: st.conn,
      loaded: () => st.current !== undefined,
      read: () => this.getRead(database, url),
    };
    return this.probes.probe(database, target, timeoutMs);
  }

  /**
   * The commit fence's probe of `database`'s locks (commit-fence.ts LOCK_PROBE_SQL), on its catalog
   * connection (outside the committing transaction). Rejects with pg's error.
   */
  lockProbe(database: string, url: string | pg.ClientConfig): LockProbe {
    return async (pid, pids) => {
      const client = await (this.state(database, url) as DbState).conn.client();
      const r = await client.query<{ locked: string[]; blockers: [number, number[]][] }>(LOCK_PROBE_SQL, [
        pid,
        pids,
      ]);
      const row = r.rows[0];
      return {
        locked: (row?.locked ?? []).map(Number),
        blockers: new Map((row?.blockers ?? []).map(([p, b]) => [p, b])),
      };
    };
  }

  private async read(st: DbState, version: number, base: Catalog | undefined): Promise<Catalog> {
    if (this.closed) throw new CatalogUnavailable('57P03', 'the proxy is shutting down');
    const client = await st.conn.client();
    try {
      return await readCatalog(client, version, base);
    } catch (e) {
      // A broken connection is opened again on the next read.
      if (!(e as { code?: string }).code || CANNOT_CONNECT.has((e as { code: string }).code))
        void st.conn.drop();
      throw e;
    }
  }
}

// Keeps the current Catalog of each upstream database: LRU + TTL, single-flight loads, monotonic versions, invalidation.
import { LRUCache } from 'lru-cache';
import type { Catalog } from './types.js';

/**
 * Loads a fresh Catalog stamped with `version` (e.g. `(v) => readCatalog(client, v)`).
 * Rejections propagate to every caller waiting on that load; nothing is cached.
 */
export type CatalogLoader = (version: number) => Promise<Catalog>;

/** Options of {@link CatalogCache}. */
export interface CatalogCacheOptions {
  /**
   * Milliseconds a loaded Catalog stays current; after that the next `get` reloads it (with a
   * higher version). Default: no expiry (only `invalidate` or eviction reloads).
   */
  readonly ttlMs?: number;
  /** Most databases kept at once (least recently used evicted first). Default 1000. */
  readonly max?: number;
}

/** An in-progress load: joined by later gets of the same generation. */
interface Flight {
  readonly generation: number;
  readonly promise: Promise<Catalog>;
}

/**
 * The current Catalog per database key (any string naming one upstream database, e.g.
 * `host:port/dbname`).
 *
 * - Versions are monotonic per key and never reused: every load takes the next number, even after
 *   eviction, TTL expiry or a failed load, so an analysis cached under (text, search_path,
 *   version) can never be served against a different catalog (DESIGN.md "Analysis").
 * - Single-flight: concurrent gets of a key share one load.
 * - `invalidate` makes the next get load again; a load already running when invalidate is called
 *   still answers the gets that joined it, but its result is not kept, since it may predate the
 *   change that caused the invalidation (DDL seen on the wire, an origin mismatch).
 * Never throws itself; `get` rejects with whatever the loader rejects with.
 */
export class CatalogCache {
  private readonly current: LRUCache<string, Catalog>;
  /** Last version handed to a loader, per key; never evicted (one number per database). */
  private readonly lastVersion = new Map<string, number>();
  /** Bumped by invalidate; a load keeps its result only if the generation did not move. */
  private readonly generation = new Map<string, number>();
  private readonly inflight = new Map<string, Flight>();

  /** @param opts see {@link CatalogCacheOptions}. Throws RangeError for a non-positive max or ttlMs. */
  constructor(opts: CatalogCacheOptions = {}) {
    const max = opts.max ?? 1000;
    if (!(max >= 1)) throw new RangeError(`max must be at least 1, got ${max}`);
    if (opts.ttlMs !== undefined && !(opts.ttlMs > 0)) {
      throw new RangeError(`ttlMs must be positive, got ${opts.ttlMs}`);
    }
    this.current = new LRUCache<string, Catalog>({
      max,
      ...(opts.ttlMs !== undefined ? { ttl: opts.ttlMs } : {}),
    });
  }

  /**
   * Resolves to the current Catalog of `dbKey`: the cached one while it is fresh, else the one
   * `loader` produces for the next version (shared with concurrent callers).
   * Rejects with the loader's error (e.g. pg's DatabaseError with its SQLSTATE in `code`).
   */
  get(dbKey: string, loader: CatalogLoader): Promise<Catalog> {
    const cached = this.current.get(dbKey);
    if (cached) return Promise.resolve(cached);
    const generation = this.generation.get(dbKey) ?? 0;
    const flight = this.inflight.get(dbKey);
    if (flight && flight.generation === generation) return flight.promise;

    const version = (this.lastVersion.get(dbKey) ?? 0) + 1;
    this.lastVersion.set(dbKey, version);
    // Started on a later microtask so a loader that throws synchronously rejects like any other.
    const promise: Promise<Catalog> = Promise.resolve()
      .then(() => loader(version))
      .then((loaded) => {
        const catalog = loaded.version === version ? loaded : Object.freeze({ ...loaded, version });
        if ((this.generation.get(dbKey) ?? 0) === generation) this.current.set(dbKey, catalog);
        return catalog;
      })
      .finally(() => {
        if (this.inflight.get(dbKey)?.promise === promise) this.inflight.delete(dbKey);
      });
    this.inflight.set(dbKey, { generation, promise });
    return promise;
  }

  /** The cached, unexpired Catalog of `dbKey`, without loading; undefined if there is none. */
  peek(dbKey: string): Catalog | undefined {
    return this.current.get(dbKey);
  }

  /**
   * Drops the Catalog of `dbKey` so the next `get` loads a new one with a higher version; a load
   * in progress is not reused. Returns nothing; never throws.
   */
  invalidate(dbKey: string): void {
    this.generation.set(dbKey, (this.generation.get(dbKey) ?? 0) + 1);
    this.current.delete(dbKey);
  }
}

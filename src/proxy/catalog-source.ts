// Gives sessions the current Catalog of their upstream database, read with the server-held login.
import pg from 'pg';
import { CatalogCache } from '../catalog/catalog-cache.js';
import { readCatalog } from '../catalog/read-catalog.js';
import type { Catalog } from '../catalog/types.js';

/**
 * One CatalogCache shared by every session of a proxy, keyed by the client-facing database
 * name. A load opens a short-lived `pg` connection with the database's configured URL (the
 * same login the sessions use, so `defaultSearchPath` is what their sessions start with),
 * reads, and closes it. Refresh points (issue 5 "Catalog freshness"): `invalidate` after DDL,
 * on an unknown relation or column, on a RowDescription that disagrees with the analysis, and
 * the TTL (`catalog.ttl_seconds`).
 */
export class CatalogSource {
  private readonly cache: CatalogCache;
  /** When each database's catalog was last read (ms since the epoch). */
  private readonly loadedAt = new Map<string, number>();
  /** Bumped by every invalidation: a session's own in-band catalog is stale once it moves. */
  private readonly generations = new Map<string, number>();

  /** The invalidation count of `database` (DDL through pgwarden anywhere, refreshes). */
  generation(database: string): number {
    return this.generations.get(database) ?? 0;
  }

  private bump(database: string): void {
    this.generations.set(database, this.generation(database) + 1);
  }

  /**
   * @param ttlMs how long a loaded catalog stays current, in milliseconds.
   * @param afterRead awaited after every read, before the new catalog is handed out (the grant sync
   * of `roles: managed`: a table made through pgwarden is granted before a statement can name it).
   * It must not reject.
   */
  constructor(
    ttlMs: number,
    private readonly afterRead?: (database: string, catalog: Catalog) => Promise<void>,
  ) {
    this.cache = new CatalogCache({ ttlMs });
  }

  /**
   * The current catalog of `database` (upstream `url`, or a `pg` client config carrying the
   * database's TLS, see `pgClientConfig`). Rejects with pg's error (its SQLSTATE in `code`) when the
   * upstream cannot be read; the caller refuses the statement then.
   */
  get(database: string, upstream: string | pg.ClientConfig): Promise<Catalog> {
    return this.cache.get(database, async (version) => {
      const client = new pg.Client({
        ...(typeof upstream === 'string' ? { connectionString: upstream } : upstream),
        connectionTimeoutMillis: 10_000,
      });
      await client.connect();
      let catalog: Catalog;
      try {
        catalog = await readCatalog(client, version);
        this.loadedAt.set(database, Date.now());
      } finally {
        await client.end().catch(() => {});
      }
      await this.afterRead?.(database, catalog);
      return catalog;
    });
  }

  /** The catalog already loaded for `database`, without loading. */
  peek(database: string): Catalog | undefined {
    return this.cache.peek(database);
  }

  /** Makes the next `get` read the catalog again (with a higher version). */
  invalidate(database: string): void {
    this.cache.invalidate(database);
    this.bump(database);
  }

  /**
   * Makes the next `get` read the catalog again, unless it was read less than `minAgeMs` ago:
   * a statement naming an unknown relation asks for a fresh catalog, and a stream of such
   * statements must not become a stream of catalog reads against the upstream. Returns whether
   * the catalog will be read again.
   */
  refresh(database: string, minAgeMs: number): boolean {
    const at = this.loadedAt.get(database);
    if (at !== undefined && Date.now() - at < minAgeMs) return false;
    this.invalidate(database);
    return true;
  }
}

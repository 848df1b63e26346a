// The catalog one session analyzes with: at login, then the shared one, or one read on its own upstream connection after its DDL.
import type { ClientConfig } from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import { loadParser, majorOfServerVersion } from '../sql/parser.js';
import { parseSearchPathText } from '../sql/search-path-text.js';
import type { TransactionStatus } from '../wire/backend.js';
import { type CatalogSource, CatalogUnavailable } from './catalog-source.js';
import { fatal } from './client-error.js';
import type { CommitFence, LockProbe } from './commit-fence.js';

/** The shortest time between two catalog reads forced by unknown names (ms). */
export const CATALOG_REFRESH_MIN_MS = 1000;

/** The longest a MANAGE statement waits for a grant sync that runs ({@link SessionCatalog.manageReady}), ms. */
export const MANAGE_WAIT_MS = 2000;

/** Versions of in-band catalogs count down from -1, apart from the shared catalogs' positive ones. */
let nextOwnCatalogVersion = -1;

/** What the session catalog needs of the session's relay: its transaction count and the in-band read. */
export interface InBandReader {
  /** Transactions ended on this session so far (ReadyForQuery 'I' after a transaction). */
  readonly transactionsEnded: number;
  /** Reads the catalog on the session's upstream connection (relay-in-band-catalog.ts); null when it cannot now. */
  readInBandCatalog(version: number, base?: Catalog): Promise<Catalog | null>;
}

/**
 * One session's view of the catalog of its database (issue 15): the shared catalog
 * (catalog-source.ts), except inside a transaction that changed the catalog, or while shared
 * reads fail, when it is read on the session's own upstream connection (which alone sees its
 * uncommitted DDL and temporary tables, under its own locks). DDL marks the shared catalog for a
 * read once the transaction ends, never while it holds its locks.
 */
export class SessionCatalog {
  /** A catalog read on this session's own upstream connection, until the next DDL. */
  private own: Catalog | undefined;
  private ownAt = 0;
  /** What the own catalog was read under: the shared invalidation count and the transaction. */
  private ownKey = { generation: 0, tx: 0 };
  /** DDL (or an origin mismatch) since the last ReadyForQuery: the shared catalog is invalidated once the transaction ends. */
  private changed = false;
  /**
   * This session's open transaction changed the catalog: until it ends, only a read on its own
   * connection sees those changes (and reading elsewhere would wait for the locks it holds).
   */
  private changedInTx = false;
  /** The session's relay, once it exists (the in-band read runs on it). */
  relay: InBandReader | undefined;

  /**
   * @param catalogs the server's shared catalogs
   * @param database the session's database
   * @param dbClient the `pg` config a shared read of that database uses
   * @param needsGrants the session logs in as a set login (`roles: managed`): it is handed a
   * shared catalog only once the grant sync after its read is done (CatalogSource `granted`)
   * @param pendingScope for such a session: the relations whose grants a sync to a catalog may
   * change for its login (ManagedRoles.pendingScope), undefined when unknown
   */
  constructor(
    private readonly catalogs: CatalogSource,
    private readonly database: string,
    private readonly dbClient: ClientConfig,
    private readonly log: Logger,
    needsGrants = false,
    private readonly pendingScope?: (catalog: Catalog) => ReadonlySet<number> | undefined,
  ) {
    this.granted = { granted: needsGrants };
  }
  private readonly granted: { readonly granted: boolean };

  /**
   * For a set login's session while the grant sync after a catalog read runs: that catalog, the
   * relations (OIDs) whose grants the sync may change for the login, and the sync; undefined when
   * there is no such sync, the scope is unknown, or the session analyzes with its own catalog.
   * Issue 15: a statement that reads none of those relations is decided with it at once (its
   * PostgreSQL grants on what it reads are those the sync leaves), else it waits ({@link get}).
   */
  async beforeGrants(): Promise<
    { catalog: Catalog; changed: ReadonlySet<number>; synced: Promise<void> } | undefined
  > {
    if (!this.granted.granted || !this.pendingScope || this.changedInTx) return undefined;
    this.dropStaleOwn();
    const db = this.database;
    if (this.own || this.catalogs.failing(db) || this.catalogs.connecting(db)) return undefined;
    // The read is waited for (its catalog has the change); the sync after it is not. A failed
    // read is get's to handle.
    const read = await this.catalogs.get(db, this.dbClient).catch(() => undefined);
    if (!read) return undefined;
    const pending = this.catalogs.ungranted(db);
    if (!pending) return undefined;
    const changed = this.pendingScope(pending.catalog);
    return changed ? { ...pending, changed } : undefined;
  }

  /**
   * The catalog to analyze with (`refresh`: an unknown name asks for a fresh read, at most one a
   * second per database). Rejects with CatalogUnavailable when neither the shared read nor the
   * in-band one succeeds.
   */
  async get(refresh: boolean): Promise<Catalog> {
    const database = this.database;
    this.dropStaleOwn();
    // At most one refresh a second per database: unknown names must not drive catalog reads.
    if (refresh && this.catalogs.refresh(database, CATALOG_REFRESH_MIN_MS)) this.own = undefined;
    if (this.own) return this.own;
    // Issue 16: while a refresh that only an unknown name asked for fails, a statement
    // that names nothing unknown is analyzed as before it (a refresh asks for a read).
    const unchanged = () => (refresh || this.changedInTx ? undefined : this.catalogs.lastUnchanged(database));
    const last = this.catalogs.failing(database) ? unchanged() : undefined;
    if (last) return last;
    // Issue 15: inside a transaction that changed the catalog, read it on this connection
    // (its own snapshot and locks); the shared catalog does not have those changes yet.
    // While shared reads fail, or wait for the catalog connection to open, read here too
    // rather than wait (issue 16).
    const shared = this.catalogs;
    if (this.changedInTx || shared.failing(database) || shared.connecting(database)) {
      const own = await this.readOwn();
      if (own) return own;
    }
    try {
      return await this.catalogs.get(database, this.dbClient, this.granted);
    } catch (e) {
      // A shared read that fails does not fail a statement this connection can analyze.
      const own = await this.readOwn();
      if (own) return own;
      const fallback = unchanged();
      if (fallback) return fallback;
      throw e;
    }
  }

  /** The catalog when it is loaded and current, without waiting; undefined when it must be read. */
  now(): Catalog | undefined {
    this.dropStaleOwn();
    if (this.own) return this.own;
    return this.changedInTx ? undefined : this.catalogs.peek(this.database, this.granted);
  }

  /**
   * The last catalog this session had (its own in-band one, else the shared one's last read),
   * current or not, without waiting; undefined before any read. For statements that name nothing
   * a catalog holds (statement-gate.ts: transaction control).
   */
  last(): Catalog | undefined {
    return this.own ?? this.catalogs.last(this.database);
  }

  /**
   * For a statement that may change the catalog (MANAGE): undefined when it may be sent now, else
   * a promise to await first — the grant sync running for this database (issue 15: a url login's
   * DDL must not race the sync's GRANTs on the same catalog rows), at most MANAGE_WAIT_MS (a sync
   * held up by a lock this very session's transaction holds must not hold it up in turn).
   */
  manageReady(): Promise<void> | undefined {
    if (this.granted.granted) return undefined;
    const sync = this.catalogs.syncing(this.database);
    if (!sync) return undefined;
    this.log.debug({ event: 'manage-wait', database: this.database }, 'waiting for the grant sync');
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, MANAGE_WAIT_MS);
    });
    return Promise.race([sync, bound]).finally(() => clearTimeout(timer));
  }

  /** Whether the session's transaction changed the catalog (DDL since it began): its COMMIT raises the commit fence. */
  get changesPending(): boolean {
    return this.changed || this.changedInTx;
  }

  /** The commit fence of this process's sessions (commit-fence.ts) and its lock probe of this database. */
  commitFence(): { readonly fence: CommitFence; readonly probe: LockProbe } {
    return { fence: this.catalogs.fence, probe: this.catalogs.lockProbe(this.database, this.dbClient) };
  }

  /** DDL or an origin mismatch: the own catalog is dropped, the shared one read again once the transaction ends. */
  invalidate(): void {
    // Other sessions see this change once it commits: the shared catalog is read again when
    // the transaction ends (transactionStatus), never while it holds its locks.
    this.changed = true;
    this.own = undefined;
  }

  /** The transaction status of each ReadyForQuery: a transaction that changed the catalog has ended, or goes on. */
  transactionStatus(status: TransactionStatus): void {
    if (!this.changed && !this.changedInTx) return;
    if (status === 'I') {
      this.changed = false;
      this.changedInTx = false;
      this.catalogs.invalidate(this.database);
    } else if (this.changed) {
      this.changed = false;
      this.changedInTx = true;
    }
  }

  /**
   * The own catalog holds within the transaction it was read in, and only until DDL anywhere
   * through pgwarden or a refresh invalidates the shared one (attack corpus 3: another session's
   * CREATE OR REPLACE VIEW must not be read as the old definition here).
   */
  private dropStaleOwn(): void {
    if (!this.own) return;
    if (
      this.ownKey.generation !== this.catalogs.generation(this.database) ||
      this.ownKey.tx !== (this.relay?.transactionsEnded ?? 0)
    ) {
      this.own = undefined;
    }
  }

  /**
   * The catalog read on this session's own upstream connection, incremental on top of the last
   * shared catalog. Read again only when the last in-band read is older than a second or DDL
   * came since. Resolves null when the connection is not free for it (replies owed, a failed
   * transaction) or the read failed.
   */
  async readOwn(): Promise<Catalog | null> {
    if (this.own && Date.now() - this.ownAt < CATALOG_REFRESH_MIN_MS) return this.own;
    const generation = this.catalogs.generation(this.database);
    const tx = this.relay?.transactionsEnded ?? 0;
    const own = await this.relay?.readInBandCatalog(
      nextOwnCatalogVersion--,
      this.catalogs.last(this.database),
    );
    this.ownAt = Date.now();
    this.ownKey = { generation, tx };
    this.log.debug(
      { event: 'in-band-catalog', read: own !== null && own !== undefined, relations: own?.relations.size },
      'in-band catalog',
    );
    this.own = own ?? undefined;
    return own ?? null;
  }
}

/**
 * What a session starts analyzing with, once logged in upstream: the parser of the server's major
 * (DESIGN.md "Parsing": no parser, no session), and the search_path to start with — the startup
 * parameter's, else the login's default from the catalog (the shared read, else the last one read).
 * Rejects with FATAL 0A000 for a server major without a parser, 22023 for an invalid search_path,
 * CatalogUnavailable's SQLSTATE (or 58000) when no catalog was ever read; the reason of a failed
 * read (host, address, server message) goes to the log only (issue 16 item 8).
 */
export async function searchPathAtLogin(
  catalogs: CatalogSource,
  database: string,
  dbClient: ClientConfig,
  serverVersionNum: number,
  searchPath: string | undefined,
  log: Logger,
): Promise<readonly string[]> {
  try {
    await loadParser(majorOfServerVersion(serverVersionNum));
  } catch (e) {
    throw fatal('0A000', (e as Error).message);
  }
  let catalog: Catalog;
  try {
    catalog = await catalogs.get(database, dbClient);
  } catch (e) {
    log.error({ event: 'catalog-failed', err: (e as Error).message }, 'cannot read the upstream catalog');
    // Only the login's default search_path is needed here: the last catalog read has it.
    const last = catalogs.last(database);
    if (!last) {
      throw fatal(
        e instanceof CatalogUnavailable ? e.sqlstate : '58000',
        `pgwarden cannot read the catalog of database "${database}" now`,
      );
    }
    catalog = last;
  }
  if (searchPath === undefined) return catalog.defaultSearchPath;
  const parsed = parseSearchPathText(searchPath);
  if (!parsed) throw fatal('22023', `invalid value for parameter "search_path": "${searchPath}"`);
  return parsed;
}

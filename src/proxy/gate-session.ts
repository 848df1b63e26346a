// What the gate needs from a session: its policy, roles, search paths, SQL-level names and catalog.
import type { Catalog } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import type { ConnectionKind, Refusal } from '../policy/decision-types.js';
import type { WallSwitches } from '../policy/wall-switches.js';
import type { RewriteCache } from '../rewrite/rewrite-cache.js';
import type { StatementAnalysis } from '../sql/analysis-types.js';
import type { SearchPathTracker } from './search-path-tracker.js';

/**
 * A SQL-level prepared statement: its analysis, the PREPARE statement's own text, and the
 * search_path and catalog it was analyzed under. Postgres re-analyzes a prepared statement
 * when search_path or the objects it uses change, so EXECUTE re-analyzes it then too.
 */
export interface SqlPrepared {
  readonly inner: StatementAnalysis;
  readonly text: string;
  readonly pathVersion: number;
  readonly catalogVersion: number;
}

/** SQL-level PREPARE and DECLARE CURSOR: the inner statement a name stands for, kept by the session. */
export interface SqlNames {
  readonly prepared: Map<string, SqlPrepared>;
  readonly cursors: Map<string, StatementAnalysis>;
}

/** What the gate needs from the session. */
export interface GateSession {
  readonly config: Config;
  readonly roles: readonly string[];
  readonly database: string;
  readonly connection: ConnectionKind;
  readonly paths: SearchPathTracker;
  readonly names: SqlNames;
  /** The catalog to analyze with: the session's own in-band one when it has one, else the shared one (`refresh`: read anew). */
  readonly catalog: (refresh: boolean) => Promise<Catalog>;
  /** That catalog when it is loaded and current, without waiting; undefined when it must be read. */
  readonly catalogNow: () => Catalog | undefined;
  /**
   * The last catalog the session had, current or not, without waiting (undefined when none): what a
   * string of transaction control alone (COMMIT after DDL) is decided with, which names nothing a
   * catalog holds; absent: always wait for a current one.
   */
  readonly catalogLast?: () => Catalog | undefined;
  /**
   * A set login's session while the grant sync after a catalog read runs (issue 15): that
   * catalog, the relations (OIDs) whose grants the sync may change, and the sync; undefined when
   * none (SessionCatalog.beforeGrants); absent: never.
   */
  readonly catalogBeforeGrants?: () => Promise<
    { catalog: Catalog; changed: ReadonlySet<number>; synced: Promise<void> } | undefined
  >;
  /**
   * Reads the catalog on the session's own upstream connection, which alone sees its
   * uncommitted DDL and its temporary tables; null when the connection is not free for it.
   */
  readonly inBandCatalog: () => Promise<Catalog | null>;
  /**
   * For a decided string with a statement that may change the catalog: a promise to await before
   * it is sent (a grant sync running, issue 15), or undefined; absent: never wait.
   */
  readonly manageReady?: () => Promise<void> | undefined;
  /** Rewritten texts of the server (mask at read), shared by its sessions. */
  readonly rewrites?: RewriteCache;
  /** Test-only wall switches (policy/wall-switches.ts); absent: every wall on. */
  readonly walls?: WallSwitches;
  /**
   * The refusal while the instance's policy lags the store past the bound (issue 21, 57P03), else
   * undefined; absent: the policy is the config file's, never stale.
   */
  readonly policyRefusal?: () => Refusal | undefined;
}

/**
 * The session's paths, with its temporary schema first when the catalog knows it: Postgres
 * searches `pg_temp_N` before everything else for relations unless the path names it.
 */
export function pathsFor(session: GateSession, catalog: Catalog): ReturnType<SearchPathTracker['paths']> {
  const p = session.paths.paths();
  const temp = (catalog as { tempSchema?: string }).tempSchema;
  if (!temp) return p;
  const add = (path: readonly string[]) =>
    path.includes('pg_temp') || path.includes(temp) ? path : [temp, ...path];
  return {
    searchPath: add(p.searchPath),
    sessionSearchPath: add(p.sessionSearchPath),
    transactionStartSearchPath: add(p.transactionStartSearchPath),
    resetSearchPath: add(p.resetSearchPath),
  };
}

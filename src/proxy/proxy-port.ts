// What a running proxy offers the command line, the admin API, mcp and workers (ProxyServer), and the options that start one (ProxyOptions).
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import type { LoadedConfig } from '../policy/config-load.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import type { PolicyCurrency } from '../policy/policy-lag.js';
import type { WallSwitches } from '../policy/wall-switches.js';
import type { ManagedRoles } from '../roles/managed-roles.js';
import type { AnalysisCacheStats } from '../sql/analysis-cache.js';
import type { KeyOwner } from './cancel-key.js';
import type { CancelRoutes } from './cancel-routing.js';
import type { ConsoleFactory } from './console-port.js';

/** A running proxy: its bound address, and how to reload or stop it. */
export interface ProxyServer {
  /** The bound address (the real port when the config says port 0). */
  readonly address: { host: string; port: number };
  /** Number of logged-in client sessions (connections still logging in are not counted). */
  readonly sessionCount: () => number;
  /** Number of connections still logging in (issue 16 item 5). */
  readonly pendingCount: () => number;
  /** Read-only counters for metrics and the benchmark: the analysis cache's hits and misses so far. */
  stats(): {
    analysis: AnalysisCacheStats;
    decision: { hits: number; misses: number };
    /** The memory budget (bytes): its limit, what is taken now, and the part prepared statements keep. */
    memory: { limit: number; inUse: number; retained: number };
  };
  /**
   * Readiness of `database` (`/readyz`): its catalog read and its upstream answering on the catalog
   * connection within `timeoutMs`. Never rejects.
   */
  probe(
    database: string,
    timeoutMs: number,
  ): Promise<{ catalog: boolean; upstream: boolean; error?: string }>;
  /** The epoch of the policy in force (issue 19), as stamped on audit lines. */
  epoch(): string;
  /** The config in force. */
  config(): LoadedConfig;
  /**
   * Whether this instance should get new connections (issue 21, for `/readyz`): false while its
   * policy lags the store past the bound or it is shutting down (`closing`); `reasons` says why, in words.
   */
  readiness(): { ready: boolean; closing: boolean; reasons: string[]; policy?: PolicyCurrency };
  /** Serves a CancelRequest handed over by a sibling worker: this process's keys only, never routed on. */
  cancelHere(processId: number, secretKey: number): Promise<boolean>;
  /** The managed roles of `roles: managed` databases (sweeps, sync state; tests drive them). */
  readonly managed: ManagedRoles;
  /**
   * The shared catalog of `database` (its client-facing name), the one every session analyzes
   * under: read once per version on the catalog connection, read again after DDL through any
   * session (once its transaction ends), on the TTL, and, with `refresh` (a name that did not
   * resolve), unless it was read less than a second ago — as a session's statement naming an
   * unknown relation asks. For `pgwarden mcp`'s list_tables and describe_table (issue 18).
   * Rejects with CatalogUnavailable (57P03, 58000) when it cannot be read, or a plain Error
   * for a database the config does not name.
   */
  catalog(database: string, opts?: { readonly refresh?: boolean }): Promise<Catalog>;
  /** Replaces the config for new sessions (SIGHUP, a store change) and resolves open sessions again. */
  reload(next: LoadedConfig): void;
  /**
   * Stops accepting, lets running statements finish for `graceMs` (default: the config's
   * limits.shutdown_grace_ms), then cancels what still runs (terminating its upstream backend
   * after limits.shutdown_cancel_wait_ms), rolls back open transactions and closes every session
   * with FATAL 57P01 saying what became of its statement (issue 16 item 1).
   */
  close(graceMs?: number): Promise<void>;
}

/** Options of startProxy (server.ts). */
export interface ProxyOptions {
  /**
   * The connection kind of every session (seed 004's table): the config's `mode` by default;
   * `pgwarden mcp` runs its own loopback listener with `mcp`.
   */
  readonly connection?: ConnectionKind;
  /** Listen here instead of the config's `listen` (e.g. `127.0.0.1:0` for an internal listener). */
  readonly listen?: string;
  /** Where audit lines go (default: the main logger); `serve` gives a buffered one. */
  readonly auditLogger?: Logger;
  /**
   * Test-only: walls turned off (policy/wall-switches.ts), so a test can prove each other wall
   * holds alone. The command line never sets it; not part of the config schema.
   */
  readonly walls?: WallSwitches;
  /**
   * Fleet and workers (issue 21): who owns the keys this process issues (its fleet slot and
   * worker index; read at each issue), and where a CancelRequest for another owner's key goes.
   */
  readonly cancelOwner?: () => KeyOwner;
  readonly cancelRoutes?: CancelRoutes;
  /** The policy's currency against the store (PolicySource); absent: the file's policy, never stale. */
  readonly policy?: { isCurrent(): boolean; currency(): PolicyCurrency };
  /** The wire admin console (`psql -d pgwarden`, admin/wire-console.ts); absent: that database does not exist. */
  readonly console?: ConsoleFactory;
  /** The console's RELOAD: what SIGHUP does (`serve`); rejects with the reason. Absent: RELOAD is refused. */
  readonly reloadConfig?: () => Promise<void>;
  /** The console's SHUTDOWN: what SIGTERM does (`serve`). Default: this proxy's close(). */
  readonly shutdown?: () => void;
}

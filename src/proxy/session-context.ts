// What every client session shares with the server that accepted it: config, caches, registries, callbacks.
import type tls from 'node:tls';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import type { DecisionCache } from '../policy/decision-cache.js';
import type { ConnectionKind, Refusal } from '../policy/decision-types.js';
import type { WallSwitches } from '../policy/wall-switches.js';
import type { RewriteCache } from '../rewrite/rewrite-cache.js';
import type { ManagedRoles } from '../roles/managed-roles.js';
import type { AnalysisCache } from '../sql/analyze.js';
import type { ErrorFields } from '../wire/error-fields.js';
import type { AuditLog } from './audit.js';
import type { CancelRegistry } from './cancel-registry.js';
import type { CancelOutcome } from './cancel-routing.js';
import type { CatalogSource } from './catalog-source.js';
import type { ConsoleHandler } from './console-port.js';
import type { MemoryBudget } from './memory-budget.js';
import type { ClientSession } from './session.js';
import type { VerifierCache } from './verifier-cache.js';
/** What every session shares with the server that accepted it. */
export interface SessionContext {
  /** The config in force now (a SIGHUP reload swaps it; a session keeps the one it logged in under). */
  readonly config: () => LoadedConfig;
  readonly logger: Logger;
  readonly cancels: CancelRegistry;
  /** Serves a CancelRequest: here, or routed to the worker or instance whose key it is (cancel-routing.ts). */
  readonly cancel: (processId: number, secretKey: number) => Promise<CancelOutcome>;
  readonly verifiers: VerifierCache;
  readonly tls: tls.SecureContext | undefined;
  readonly catalogs: CatalogSource;
  readonly analyses: AnalysisCache;
  readonly decisions: DecisionCache;
  /** Rewritten texts (mask at read), shared by the server's sessions. */
  readonly rewrites: RewriteCache;
  /** The budget for buffered large messages, shared by the server's sessions (issue 16 item 2). */
  readonly memory: MemoryBudget;
  /** Test-only wall switches (policy/wall-switches.ts); absent: every wall on. */
  readonly walls?: WallSwitches;
  readonly audit: AuditLog;
  /** Set logins of `roles: managed` databases (issue 17). */
  readonly managed: ManagedRoles;
  /** The connection kind this listener serves: the config's mode, or `mcp` for the MCP server's own listener. */
  readonly connection: ConnectionKind;
  /**
   * Set when the session must be refused once its StartupMessage has arrived (PostgreSQL reads the
   * packet first, then answers FATAL 53300 too_many_connections or 57P03 cannot_connect_now).
   */
  readonly refusal?: ErrorFields;
  /**
   * Called once when the client has authenticated: the server counts it as a session from now on,
   * or returns the FATAL to refuse it with (53300 over max_client_connections, 57P03 shutting down).
   */
  readonly admit: (session: ClientSession) => ErrorFields | undefined;
  /** Called once when the session has ended (both sockets closed). */
  readonly onClose: (session: ClientSession) => void;
  /** The refusal while the policy lags the store past its bound (issue 21); absent: never stale. */
  readonly policyRefusal?: () => Refusal | undefined;
  /** The wire admin console, served to a client naming database `pgwarden`; absent: no console here. */
  readonly console?: ConsoleHandler;
}

// One client connection: start-up, SCRAM authentication, the upstream session, then the relay.
import type net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { SCRAM_SHA_256 } from '../auth/scram-primitives.js';
import { ScramServerExchange } from '../auth/scram-server.js';
import type { Catalog } from '../catalog/types.js';
import { pgClientConfig, upstreamTls } from '../catalog/upstream-tls.js';
import { connectionRefused, upstreamSession } from '../ops/metrics.js';
import type { LoadedConfig } from '../policy/config-load.js';
import type { Config } from '../policy/config-schema.js';
import {
  type ConnectionRequest,
  connectionRolesAfterReload,
  resolveConnectionRoles,
} from '../policy/connection-roles.js';
import { checkDatabaseAccess } from '../policy/database-access.js';
import type { DecisionCache } from '../policy/decision-cache.js';
import type { ConnectionKind, Refusal } from '../policy/decision-types.js';
import { findPrincipal, type Principal } from '../policy/principals.js';
import { isWorkspaceAdmin } from '../policy/resolve-roles.js';
import type { WallSwitches } from '../policy/wall-switches.js';
import type { RewriteCache } from '../rewrite/rewrite-cache.js';
import { type ManagedRoles, ManagedRolesError, type SetLogin } from '../roles/managed-roles.js';
import type { AnalysisCache } from '../sql/analyze.js';
import { loadParser, majorOfServerVersion } from '../sql/parser.js';
import { parseSearchPathText } from '../sql/search-path-text.js';
import {
  authenticationOk,
  authenticationSASL,
  authenticationSASLContinue,
  authenticationSASLFinal,
  backendKeyData,
  type ErrorFields,
  errorResponse,
  negotiateProtocolVersion,
  readyForQuery,
  sslRefused,
} from '../wire/backend.js';
import { FrontendCode } from '../wire/codes.js';
import { MessageFramer } from '../wire/framer.js';
import { decodeSASLInitialResponse, decodeSASLResponse, decodeStartupPacket } from '../wire/frontend.js';
import { ProtocolError } from '../wire/protocol-error.js';
import type { AuditLog } from './audit.js';
import type { CancelRegistry } from './cancel-registry.js';
import type { CancelOutcome } from './cancel-routing.js';
import { type CatalogSource, CatalogUnavailable } from './catalog-source.js';
import {
  type ClientInfo,
  CONSOLE_DATABASE,
  type ConsoleHandler,
  consoleParameters,
  type SessionCounters,
} from './console-port.js';
import { FrameQueue } from './frame-queue.js';
import type { MemoryBudget } from './memory-budget.js';
import { Relay } from './relay.js';
import { SearchPathTracker } from './search-path-tracker.js';
import { filterStartupParams, StartupParamError } from './startup-params.js';
import {
  connectUpstream,
  parseUpstreamUrl,
  sendUpstreamCancel,
  terminateUpstreamBackend,
  UpstreamError,
  type UpstreamSession,
} from './upstream.js';
import type { VerifierCache } from './verifier-cache.js';

/** PostgreSQL's message for FATAL 57P01 admin_shutdown. */
const ADMIN_SHUTDOWN = 'terminating connection due to administrator command';
/** How long the ROLLBACK of a session idle in a transaction may take at shutdown (ms). */
const SHUTDOWN_ROLLBACK_MS = 5000;

/** The shortest time between two catalog reads forced by unknown names (ms). */
export const CATALOG_REFRESH_MIN_MS = 1000;

/** Versions of in-band catalogs count down from -1, apart from the shared catalogs' positive ones. */
let nextOwnCatalogVersion = -1;

/** Each start-up message waits at most this long; the whole login is bounded by limits.authentication_timeout_ms. */
const AUTH_TIMEOUT_MS = 60_000;
/** Pre-authentication messages are small (PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH is 65535 bytes). */
const AUTH_MAX_MESSAGE_BYTES = 65_536;

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

/** A FATAL or ERROR to send the client: an ErrorResponse with its SQLSTATE. */
export class ClientError extends Error {
  readonly fields: ErrorFields;
  constructor(fields: ErrorFields) {
    super(fields.message);
    this.fields = fields;
  }
}

/** Escapes a value for the `options` startup parameter (pg_split_opts: backslash escapes, space separates). */
function escapeOption(v: string): string {
  return v.replace(/[\\\s]/g, (c) => `\\${c}`);
}

function fatal(code: string, message: string): ClientError {
  return new ClientError({ severity: 'FATAL', code, message });
}

/**
 * The state machine of one client connection (DESIGN.md "Data flow"): start-up (SSLRequest,
 * GSSENCRequest, CancelRequest, StartupMessage), SCRAM-SHA-256, one upstream session logged
 * in with the config's credentials, then the relay of every message both ways.
 */
export class ClientSession {
  readonly id: number;
  private client: net.Socket;
  private upstream: UpstreamSession | undefined;
  private readonly log: Logger;
  private closed = false;
  private relay: Relay | undefined;
  private draining = false;
  /** The shutdown's cancel-and-rollback has begun ({@link endAfterGrace}). */
  private ending = false;
  /** Cancel the upstream's running statement; terminate the upstream backend (true when it was). */
  private upstreamControl: { cancel(): Promise<void>; terminate(): Promise<boolean> } | undefined;
  private roles: readonly string[] = [];
  /** The policy this session decides under; replaced on reload. */
  private policy: Config | undefined;
  private login: ({ readonly user: string } & ConnectionRequest) | undefined;
  private database = '';
  /** A catalog read on this session's own upstream connection (uncommitted DDL, temp tables), until the next DDL. */
  private ownCatalog: Catalog | undefined;
  private ownCatalogAt = 0;
  /** What the own catalog was read under: the shared invalidation count and the transaction. */
  private ownCatalogKey = { generation: 0, tx: 0 };
  /** DDL (or an origin mismatch) since the last ReadyForQuery: the shared catalog is invalidated once the transaction ends. */
  private catalogChanged = false;
  /**
   * This session's open transaction changed the catalog: until it ends, only a read on its own
   * connection sees those changes (and reading elsewhere would wait for the locks it holds).
   */
  private changedInTx = false;

  /**
   * The own catalog holds within the transaction it was read in, and only until DDL anywhere
   * through pgwarden or a refresh invalidates the shared one (attack corpus 3: another session's
   * CREATE OR REPLACE VIEW must not be read as the old definition here).
   */
  private dropStaleOwnCatalog(database: string): void {
    if (!this.ownCatalog) return;
    if (
      this.ownCatalogKey.generation !== this.ctx.catalogs.generation(database) ||
      this.ownCatalogKey.tx !== (this.relay?.transactionsEnded ?? 0)
    ) {
      this.ownCatalog = undefined;
    }
  }
  private cancelKey: number | undefined;
  private principal: Principal | undefined;
  /** The set login this session is logged in upstream as (`roles: managed`), and the roles it was made for. */
  private setLogin: { readonly login: SetLogin; readonly roles: readonly string[] } | undefined;
  /** The upstream login's name: the set login, or the url's login. */
  private upstreamUser = '';
  private loginTimer: NodeJS.Timeout | undefined;

  constructor(
    socket: net.Socket,
    id: number,
    private readonly ctx: SessionContext,
  ) {
    this.id = id;
    this.client = socket;
    this.log = ctx.logger.child({ conn: id });
    socket.setNoDelay(true);
    socket.on('error', (e) => this.log.debug({ err: e.message }, 'client socket error'));
    socket.on('close', () => this.close('client closed'));
  }

  /** Runs the session to its end; never rejects (every failure is sent to the client and logged). */
  async run(): Promise<void> {
    this.log.info(
      { event: 'connect', remote: `${this.client.remoteAddress}:${this.client.remotePort}` },
      'connection',
    );
    // authentication_timeout: the whole login, from the first byte (issue 16 item 5).
    this.loginTimer = setTimeout(() => {
      this.log.info({ event: 'auth-timeout' }, 'login not completed in time');
      this.terminate(fatal('57014', 'canceling authentication due to timeout'));
    }, this.ctx.config().config.limits.authentication_timeout_ms);
    this.loginTimer.unref();
    try {
      await this.startup();
    } catch (e) {
      this.failStartup(e);
    }
  }

  /** True while a statement is being decided or running upstream. */
  get busy(): boolean {
    return this.relay?.busy ?? false;
  }

  /**
   * Graceful shutdown: an idle session is closed now with FATAL 57P01 admin_shutdown (an open
   * transaction rolled back first); a busy one after its running statements answer ReadyForQuery.
   */
  shutdown(): void {
    this.draining = true;
    if (this.busy || this.ending) return;
    if (this.relay && this.relay.transactionStatus !== 'I') void this.endAfterGrace(SHUTDOWN_ROLLBACK_MS);
    else this.terminate(fatal('57P01', ADMIN_SHUTDOWN));
  }

  /**
   * The end of the shutdown grace period (issue 16 item 1). The client's further input is
   * ignored; a statement still running gets an upstream CancelRequest and `cancelWaitMs` to
   * answer (its ErrorResponse or completion is relayed to the client as usual), else its upstream
   * backend is terminated (pg_terminate_backend: it had no effect). An open transaction is rolled
   * back upstream. Then the client gets FATAL 57P01 whose DETAIL says what became of the
   * statement and the transaction, and the session closes. Never rejects.
   */
  async endAfterGrace(cancelWaitMs: number): Promise<void> {
    const relay = this.relay;
    if (this.closed || this.ending) return;
    if (!relay) {
      this.terminate(fatal('57P01', ADMIN_SHUTDOWN));
      return;
    }
    this.ending = true;
    relay.ignoreClient();
    const facts: string[] = [];
    let killed = false;
    try {
      if (relay.busy) {
        relay.forgetLastError();
        await this.upstreamControl?.cancel();
        if (await relay.idle(cancelWaitMs)) {
          const code = relay.lastErrorCode;
          facts.push(
            code === undefined
              ? 'The statement running at shutdown completed.'
              : code === '57014'
                ? 'The statement running at shutdown was canceled and had no effect.'
                : `The statement running at shutdown failed (SQLSTATE ${code}) and had no effect.`,
          );
        } else {
          killed = await this.terminateUpstream();
          facts.push(
            killed
              ? 'The statement running at shutdown did not answer a cancel request; its upstream session was terminated, so it had no effect.'
              : 'The statement running at shutdown did not answer a cancel request and its upstream session could not be terminated: its outcome is unknown.',
          );
        }
      }
      if (!killed && !this.closed && relay.transactionStatus !== 'I') {
        const rolledBack = await relay.runInternal('ROLLBACK', cancelWaitMs);
        if (rolledBack) facts.push('The open transaction was rolled back.');
        else {
          killed = await this.terminateUpstream();
          facts.push(
            killed
              ? 'The open transaction was rolled back (its upstream session was terminated).'
              : 'The open transaction could not be rolled back: its upstream session was closed, which aborts it.',
          );
        }
      } else if (killed) facts.push('Any open transaction was rolled back with it.');
    } catch (e) {
      this.log.error({ event: 'shutdown-failed', err: (e as Error).message }, 'shutdown of a session failed');
    }
    this.log.info({ event: 'shutdown-session', detail: facts.join(' ') }, 'session ended by shutdown');
    this.terminate(
      new ClientError({
        severity: 'FATAL',
        code: '57P01',
        message: ADMIN_SHUTDOWN,
        ...(facts.length > 0 ? { detail: facts.join(' ') } : {}),
      }),
    );
  }

  /**
   * Terminates the upstream backend at shutdown; its own FATAL and close no longer reach the
   * client (the session's FATAL 57P01 says what happened). True when it was terminated.
   */
  private async terminateUpstream(): Promise<boolean> {
    const socket = this.upstream?.socket;
    socket?.removeAllListeners('data');
    socket?.resume();
    return (await this.upstreamControl?.terminate()) ?? false;
  }

  /**
   * A reloaded policy (or the expiry timer): the session's roles are resolved again under it
   * (issue 4). A principal that is gone (revoked or expired key, removed or disabled user),
   * lost its role, or lost the database is closed with FATAL 28000; otherwise the session
   * decides with the new roles and policy from its next statement on.
   */
  recheck(next: Config): void {
    if (!this.login || this.closed) return;
    const r = connectionRolesAfterReload(next, this.login, Date.now());
    if (this.consoleSession) {
      // The console's commands check the caller's actions each time; only a principal gone ends it.
      if (!r.ok) {
        this.log.info({ event: 'revoked', reason: r.message }, 'session closed after a policy change');
        this.terminate(fatal('28000', r.message));
      } else this.roles = r.roles;
      return;
    }
    const access = r.ok ? checkDatabaseAccess(next, r.roles, this.database, this.ctx.connection) : undefined;
    if (!r.ok || !access?.ok) {
      const message = !r.ok ? r.message : access && !access.ok ? access.message : 'access revoked';
      this.log.info({ event: 'revoked', reason: message }, 'session closed after a policy change');
      this.terminate(fatal('28000', message));
      return;
    }
    // A session logged in as a set login holds that set's grants: another set is another login.
    const wasManage = this.setLogin === undefined;
    if (this.managedDatabase && !this.sameUpstreamLogin(next, r.roles, wasManage)) {
      const message = 'your roles changed: reconnect to log in upstream as the login of your new roles';
      this.log.info({ event: 'revoked', reason: message }, 'session closed after a policy change');
      this.terminate(fatal('28000', message));
      return;
    }
    if (this.managedDatabase && next !== this.policy) {
      // The new policy's statements may need the grants its sync brings: decide under it only
      // once the sync is done (catalogNow answers undefined meanwhile, and catalog() waits).
      const settling = this.ctx.managed.settled(this.database).then(() => {
        if (this.policySettling === settling) this.policySettling = undefined;
      });
      this.policySettling = settling;
    }
    this.policy = next;
    this.roles = r.roles;
  }

  /** Set while a reload's grant sync runs under `roles: managed`: statements wait for it. */
  private policySettling: Promise<void> | undefined;
  /** Set for a session of the wire admin console (database `pgwarden`): it has no upstream. */
  private consoleSession = false;
  /** When the client connected (ms since the epoch) and the startup parameter application_name. */
  private readonly connectedAt = Date.now();
  private applicationName = '';
  private upstreamAt = 0;

  /**
   * The wire admin console (issue 21): the caller acts as itself (no viewer), with the roles its
   * connection resolves to; it gets the parameters a server sends and ReadyForQuery, then the
   * console reads its messages. FATAL 28000 when it names a viewer or resolves to no role.
   */
  private startConsole(
    console: ConsoleHandler,
    config: Config,
    principal: Principal,
    request: ConnectionRequest,
    filtered: { user: string; upstream: ReadonlyMap<string, string> },
  ): void {
    if (request.viewer !== undefined)
      throw fatal(
        '28000',
        'the admin console acts for its caller only: pgwarden.viewer is not allowed there',
      );
    const resolution = resolveConnectionRoles(config, principal, request, Date.now());
    if (!resolution.ok) throw fatal(resolution.sqlstate, resolution.message);
    this.roles = resolution.roles;
    this.database = CONSOLE_DATABASE;
    this.consoleSession = true;
    this.policy = config;
    this.login = { user: filtered.user, ...request };
    this.applicationName = filtered.upstream.get('application_name') ?? '';
    this.client.cork();
    for (const m of consoleParameters(principal.name, this.applicationName)) this.client.write(m);
    this.client.write(readyForQuery('I'));
    this.client.uncork();
    this.log.info(
      { event: 'ready', user: filtered.user, database: CONSOLE_DATABASE },
      'admin console session ready',
    );
    console.serve({
      id: this.id,
      socket: this.client,
      log: this.log,
      caller: () => {
        const next = this.ctx.config().config;
        const r = this.login ? connectionRolesAfterReload(next, this.login, Date.now()) : undefined;
        if (!r?.ok) return undefined;
        return {
          name: principal.name,
          roles: r.roles,
          workspaceAdmin: principal.kind === 'user' && isWorkspaceAdmin(next, principal.name),
        };
      },
      terminate: (f) => this.terminate(f ? fatal(f.code, f.message) : undefined),
    });
  }

  /** What SHOW CLIENTS and SHOW SERVERS show of this session (console/port.ts ClientInfo). */
  info(): ClientInfo {
    const relay = this.relay;
    const state = !relay
      ? 'idle'
      : relay.busy
        ? 'active'
        : relay.transactionStatus === 'T'
          ? 'idle in transaction'
          : relay.transactionStatus === 'E'
            ? 'idle in transaction (aborted)'
            : 'idle';
    const up = this.upstream?.socket;
    const tlsOf = (s: net.Socket | undefined) => {
      if (!(s instanceof tls.TLSSocket)) return '';
      const c = s.getCipher();
      return `${s.getProtocol() ?? ''} ${c?.name ?? ''}`.trim();
    };
    const last = relay?.lastStatementAt;
    return {
      id: this.id,
      user: this.principal?.name ?? '',
      database: this.database,
      state,
      addr: this.client.remoteAddress ?? '',
      port: this.client.remotePort ?? 0,
      localAddr: this.client.localAddress ?? '',
      localPort: this.client.localPort ?? 0,
      connectTime: this.connectedAt,
      requestTime: last === undefined ? undefined : Math.round(performance.timeOrigin + last),
      tls: tlsOf(this.client),
      applicationName: this.applicationName,
      roles: this.roles,
      server:
        this.upstream && up
          ? {
              user: this.upstreamUser,
              addr: up.remoteAddress ?? '',
              port: up.remotePort ?? 0,
              localAddr: up.localAddress ?? '',
              localPort: up.localPort ?? 0,
              pid: this.upstream.processId,
              connectTime: this.upstreamAt,
              tls: tlsOf(up),
            }
          : undefined,
      counters: this.counters(),
    };
  }

  /** The session's counters so far (SHOW STATS): its relay's, and its client socket's bytes. */
  counters(): SessionCounters {
    const r = this.relay;
    return {
      transactions: r?.transactionsEnded ?? 0,
      queries: r?.queries ?? 0,
      refused: r?.refused ?? 0,
      queryTimeUs: Math.round(r?.queryTimeUs ?? 0),
      received: this.client.bytesRead,
      sent: this.client.bytesWritten,
    };
  }

  /**
   * KILL from the admin console: ends the session as pg_terminate_backend would (FATAL 57P01
   * admin_shutdown); a statement running upstream is canceled and an open transaction rolled back
   * first ({@link endAfterGrace}, waiting at most `cancelWaitMs`).
   */
  kill(cancelWaitMs: number): void {
    if (this.relay) void this.endAfterGrace(cancelWaitMs);
    else this.terminate(fatal('57P01', ADMIN_SHUTDOWN));
  }

  /** Whether `database` is under `roles: managed` (set when the session started). */
  private managedDatabase = false;

  /** After a reload: the same set of roles (or, for a MANAGE session, still MANAGE). */
  private sameUpstreamLogin(next: Config, roles: readonly string[], manage: boolean): boolean {
    if (manage) return this.ctx.managed.usesUrlLogin(next, this.database, roles);
    const had = new Set(this.setLogin?.roles ?? []);
    const now = new Set(roles);
    return (
      had.size === now.size &&
      [...had].every((r) => now.has(r)) &&
      !this.ctx.managed.usesUrlLogin(next, this.database, roles)
    );
  }

  /** Sends `err` (when given) and closes both sides. */
  terminate(err?: ClientError): void {
    if (this.closed) return;
    if (err && this.client.writable) this.client.write(errorResponse(err.fields));
    this.client.end();
    this.close('terminated');
  }

  private async startup(): Promise<void> {
    const config = this.ctx.config().config;
    let queue = new FrameQueue(
      this.client,
      new MessageFramer({ maxMessageBytes: AUTH_MAX_MESSAGE_BYTES, startup: true }),
    );
    let startupParams: Map<string, string> | undefined;
    // Start-up packets: SSLRequest/GSSENCRequest may come first, then the StartupMessage.
    while (!startupParams) {
      const frame = await queue.next(AUTH_TIMEOUT_MS);
      const packet = decodeStartupPacket(frame.payload);
      if (packet.kind === 'cancel') {
        const outcome = await this.ctx.cancel(packet.processId, packet.secretKey);
        this.log.info({ event: 'cancel-request', outcome }, 'cancel request');
        this.client.end();
        return;
      }
      if (packet.kind === 'ssl' || packet.kind === 'gssenc') {
        // Bytes behind an SSLRequest before our answer would be read as TLS-protected (CVE-2021-23214).
        if (queue.queued > 0 || queue.currentFramer.buffered > 0) {
          throw new ProtocolError('received unencrypted data after SSL request');
        }
        if (packet.kind === 'ssl' && this.ctx.tls && !(this.client instanceof tls.TLSSocket)) {
          queue.detach();
          this.client.write('S');
          const secure = new tls.TLSSocket(this.client, { isServer: true, secureContext: this.ctx.tls });
          secure.on('error', (e) => this.log.debug({ err: e.message }, 'tls error'));
          secure.on('close', () => this.close('client closed'));
          this.client = secure;
          queue = new FrameQueue(
            secure,
            new MessageFramer({ maxMessageBytes: AUTH_MAX_MESSAGE_BYTES, startup: true }),
          );
        } else {
          this.client.write(sslRefused());
        }
        continue;
      }
      if (packet.major !== 3)
        throw fatal('0A000', `unsupported frontend protocol ${packet.major}.${packet.minor}`);
      const unsupported = [...packet.params.keys()].filter((k) => k.startsWith('_pq_.'));
      if (packet.minor > 0 || unsupported.length > 0)
        this.client.write(negotiateProtocolVersion(0, unsupported));
      startupParams = new Map([...packet.params].filter(([k]) => !k.startsWith('_pq_.')));
    }

    if (this.ctx.refusal) throw new ClientError(this.ctx.refusal);
    const filtered = filterStartupParams(startupParams);
    // tls.mode require: as a pg_hba.conf of `hostssl` lines only, a plaintext client is refused
    // after its StartupMessage (issue 16 item 6).
    if (config.tls?.mode === 'require' && !(this.client instanceof tls.TLSSocket)) {
      throw new ClientError({
        severity: 'FATAL',
        code: '28000',
        message: `connection requires TLS: user "${filtered.user}", database "${filtered.database}", no encryption`,
        hint: 'Connect with sslmode=require (or verify-full with the proxy’s CA).',
      });
    }
    const now = Date.now();
    const principal = findPrincipal(config, filtered.user, now);
    await this.authenticate(queue, filtered.user, principal);
    clearTimeout(this.loginTimer);
    const refused = this.ctx.admit(this);
    if (refused) throw new ClientError(refused);
    if (queue.queued > 0 || queue.currentFramer.buffered > 0) {
      throw new ProtocolError('unexpected message before authentication completed');
    }
    queue.detach();
    this.principal = principal ?? undefined;

    if (!principal) throw fatal('28P01', `password authentication failed for user "${filtered.user}"`);
    const request: ConnectionRequest = {
      ...(filtered.pgwarden.role !== undefined ? { requestedRole: filtered.pgwarden.role } : {}),
      ...(filtered.pgwarden.viewer !== undefined ? { viewer: filtered.pgwarden.viewer } : {}),
    };
    if (filtered.database === CONSOLE_DATABASE && this.ctx.console) {
      this.startConsole(this.ctx.console, config, principal, request, filtered);
      return;
    }
    const resolution = resolveConnectionRoles(config, principal, request, Date.now());
    if (!resolution.ok) throw fatal(resolution.sqlstate, resolution.message);
    this.roles = resolution.roles;
    const access = checkDatabaseAccess(config, resolution.roles, filtered.database, this.ctx.connection);
    if (!access.ok) {
      throw new ClientError({
        severity: 'FATAL',
        code: access.sqlstate,
        message: access.message,
        ...(access.detail ? { detail: access.detail } : {}),
      });
    }
    const db = config.databases[filtered.database] as Config['databases'][string];
    let target = parseUpstreamUrl(db.url);
    const configDir = path.dirname(this.ctx.config().file);
    const dbClient = pgClientConfig(db, configDir);
    const secure = upstreamTls(db, configDir);
    let setLogin: SetLogin | undefined;
    try {
      setLogin = await this.ctx.managed.loginFor(config, filtered.database, resolution.roles);
    } catch (e) {
      if (e instanceof ManagedRolesError) throw fatal(e.sqlstate, e.message);
      throw e;
    }
    if (setLogin) target = { ...target, user: setLogin.user, password: setLogin.password };
    let upstream: UpstreamSession;
    // pgwarden.identity and pgwarden.roles become the upstream session's reset values (RESET ALL
    // and DISCARD ALL bring them back), for row-level security per viewer (issue 8).
    const params = new Map(filtered.upstream);
    params.set(
      'options',
      `-c pgwarden.identity=${escapeOption(resolution.identity)} -c pgwarden.roles=${escapeOption(resolution.roles.join(','))}`,
    );
    try {
      try {
        upstream = await connectUpstream(target, params, config.limits.connect_timeout_ms, secure);
      } catch (e) {
        // A set login whose password was changed behind pgwarden's back is taken back (issue 17).
        if (!(setLogin && e instanceof UpstreamError && e.fields.code === '28P01')) throw e;
        this.log.warn({ event: 'set-login-refused', login: setLogin.user }, 'set login refused its password');
        try {
          setLogin = await this.ctx.managed.loginRejected(filtered.database, setLogin, resolution.roles);
        } catch (m) {
          if (m instanceof ManagedRolesError) throw fatal(m.sqlstate, m.message);
          throw m;
        }
        target = { ...target, user: setLogin.user, password: setLogin.password };
        upstream = await connectUpstream(target, params, config.limits.connect_timeout_ms, secure);
      }
    } catch (e) {
      if (e instanceof UpstreamError) {
        // The upstream login is the proxy's, not the client's: its failures (a wrong server-held
        // password, a missing role) are the operator's to read in the log; the client learns
        // neither the role nor the reason. Capacity and availability errors pass as they are.
        const passes = ['53300', '57P03', '3D000', '08006'].includes(e.fields.code);
        this.log.error(
          {
            event: 'upstream-login-failed',
            code: e.fields.code,
            message: e.fields.message,
            login: target.user,
            ...(e.logDetail ? { err: e.logDetail, upstream: `${target.host}:${target.port}` } : {}),
          },
          'upstream login failed',
        );
        throw new ClientError(
          passes
            ? { ...e.fields, severity: 'FATAL', localizedSeverity: undefined }
            : {
                severity: 'FATAL',
                code: '08006',
                message: 'pgwarden could not open a session on the upstream database; see the proxy log',
              },
        );
      }
      throw e;
    }
    this.database = filtered.database;
    this.managedDatabase = this.ctx.managed.manages(config, filtered.database);
    this.upstreamUser = target.user;
    if (setLogin) {
      this.setLogin = { login: setLogin, roles: [...resolution.roles] };
      this.ctx.managed.using(filtered.database, setLogin.user, 1);
    }
    if (this.closed) {
      upstream.socket.destroy();
      return;
    }
    this.upstream = upstream;
    this.upstreamAt = Date.now();
    this.applicationName = filtered.upstream.get('application_name') ?? '';
    upstreamSession(1);
    // The parser's major must be the server's (DESIGN.md "Parsing"): no parser, no session.
    try {
      await loadParser(majorOfServerVersion(upstream.serverVersionNum));
    } catch (e) {
      upstream.socket.destroy();
      throw fatal('0A000', (e as Error).message);
    }
    let catalog: Catalog;
    try {
      catalog = await this.ctx.catalogs.get(filtered.database, dbClient);
    } catch (e) {
      // The reason (a socket error names the upstream's address) is for the log only (issue 16 item 8).
      this.log.error(
        { event: 'catalog-failed', err: (e as Error).message },
        'cannot read the upstream catalog',
      );
      // Only the login's default search_path is needed here: the last catalog read has it.
      const last = this.ctx.catalogs.last(filtered.database);
      if (!last) {
        upstream.socket.destroy();
        // The reason (host, address, server message) is in the log, not for the client.
        throw fatal(
          e instanceof CatalogUnavailable ? e.sqlstate : '58000',
          `pgwarden cannot read the catalog of database "${filtered.database}" now`,
        );
      }
      catalog = last;
    }
    let startPath = catalog.defaultSearchPath;
    if (filtered.searchPath !== undefined) {
      const parsed = parseSearchPathText(filtered.searchPath);
      if (!parsed) {
        upstream.socket.destroy();
        throw fatal('22023', `invalid value for parameter "search_path": "${filtered.searchPath}"`);
      }
      startPath = parsed;
    }
    const key = this.ctx.cancels.issue({
      processId: upstream.processId,
      secretKey: upstream.secretKey,
      cancel: () => sendUpstreamCancel(target, upstream.processId, upstream.secretKey),
    });
    this.cancelKey = key.processId;
    this.upstreamControl = {
      cancel: () => sendUpstreamCancel(target, upstream.processId, upstream.secretKey),
      terminate: () => terminateUpstreamBackend(dbClient, upstream.processId),
    };
    this.client.cork();
    for (const m of upstream.parameterMessages) this.client.write(m);
    this.client.write(backendKeyData(key.processId, key.secretKey));
    this.client.write(readyForQuery('I'));
    this.client.uncork();
    this.log.info(
      {
        event: 'ready',
        user: filtered.user,
        database: filtered.database,
        login: target.user,
        server_version: upstream.serverVersionNum,
      },
      'session ready',
    );
    const database = filtered.database;
    this.policy = config;
    this.login = { user: filtered.user, ...request };
    this.database = database;
    const self = this;
    const relay = new Relay({
      client: this.client,
      upstream,
      log: this.log,
      audit: this.ctx.audit,
      connId: this.id,
      identity: principal.name,
      ...(resolution.viewer !== undefined ? { viewer: resolution.viewer } : {}),
      login: this.upstreamUser,
      secondWall: this.setLogin !== undefined,
      gateSession: {
        // Getters: a policy reload swaps the config and the roles of an open session (issue 4).
        get config(): Config {
          return self.policy as Config;
        },
        get roles() {
          return self.roles;
        },
        database,
        connection: this.ctx.connection,
        paths: new SearchPathTracker(startPath),
        names: { prepared: new Map(), cursors: new Map() },
        rewrites: this.ctx.rewrites,
        ...(this.ctx.walls ? { walls: this.ctx.walls } : {}),
        catalog: async (refresh) => {
          if (this.policySettling) await this.policySettling;
          this.dropStaleOwnCatalog(database);
          // At most one refresh a second per database: unknown names must not drive catalog reads.
          if (refresh && this.ctx.catalogs.refresh(database, CATALOG_REFRESH_MIN_MS))
            this.ownCatalog = undefined;
          if (this.ownCatalog) return this.ownCatalog;
          // Issue 16: while a refresh that only an unknown name asked for fails, a statement
          // that names nothing unknown is analyzed as before it (a refresh asks for a read).
          const unchanged = () =>
            refresh || this.changedInTx ? undefined : this.ctx.catalogs.lastUnchanged(database);
          const last = this.ctx.catalogs.failing(database) ? unchanged() : undefined;
          if (last) return last;
          // Issue 15: inside a transaction that changed the catalog, read it on this connection
          // (its own snapshot and locks); the shared catalog does not have those changes yet.
          // While shared reads fail, read here too rather than wait (issue 16).
          if (this.changedInTx || this.ctx.catalogs.failing(database)) {
            const own = await readOwn();
            if (own) return own;
          }
          try {
            return await this.ctx.catalogs.get(database, dbClient);
          } catch (e) {
            // A shared read that fails does not fail a statement this connection can analyze.
            const own = await readOwn();
            if (own) return own;
            const fallback = unchanged();
            if (fallback) return fallback;
            throw e;
          }
        },
        catalogNow: () => {
          if (this.policySettling) return undefined;
          this.dropStaleOwnCatalog(database);
          if (this.ownCatalog) return this.ownCatalog;
          return this.changedInTx ? undefined : this.ctx.catalogs.peek(database);
        },
        inBandCatalog: () => readOwn(),
        ...(this.ctx.policyRefusal ? { policyRefusal: this.ctx.policyRefusal } : {}),
      },
      cache: this.ctx.analyses,
      decide: (analysis, roles, dctx) => this.ctx.decisions.decide(analysis, roles, dctx),
      invalidateCatalog: () => {
        // Other sessions see this change once it commits: the shared catalog is read again when
        // the transaction ends (onTransactionStatus), never while it holds its locks.
        this.catalogChanged = true;
        this.ownCatalog = undefined;
      },
      maxMessageBytes: config.limits.max_message_bytes,
      memory: this.ctx.memory,
      terminate: (f) => this.terminate(f ? new ClientError(f) : undefined),
      onTransactionStatus: (status) => {
        if (this.catalogChanged || this.changedInTx) {
          if (status === 'I') {
            this.catalogChanged = false;
            this.changedInTx = false;
            this.ctx.catalogs.invalidate(database);
          } else if (this.catalogChanged) {
            this.catalogChanged = false;
            this.changedInTx = true;
          }
        }
        // After the ReadyForQuery has been written: a draining session closes between statements.
        if (this.draining && !this.ending) setImmediate(() => !this.busy && this.shutdown());
      },
    });
    this.relay = relay;
    const readOwn = (): Promise<Catalog | null> => this.readOwnCatalog(database);
    upstream.socket.on('error', (e) => this.log.warn({ err: e.message }, 'upstream socket error'));

    upstream.socket.on('close', () => {
      if (!this.closed && !this.ending) {
        this.log.info({ event: 'upstream-closed' }, 'upstream closed');
        this.client.end();
        this.close('upstream closed');
      }
    });
    relay.start();
  }

  /**
   * The catalog read on this session's own upstream connection, which alone sees its
   * uncommitted DDL and its temporary tables, and reads under its own locks: incremental on top
   * of the last shared catalog. Read again only when the last in-band read is older than a
   * second or DDL came since. Resolves null when the connection is not free for it (replies
   * owed, a failed transaction) or the read failed.
   */
  private async readOwnCatalog(database: string): Promise<Catalog | null> {
    if (this.ownCatalog && Date.now() - this.ownCatalogAt < CATALOG_REFRESH_MIN_MS) return this.ownCatalog;
    const generation = this.ctx.catalogs.generation(database);
    const tx = this.relay?.transactionsEnded ?? 0;
    const own = await this.relay?.readInBandCatalog(
      nextOwnCatalogVersion--,
      this.ctx.catalogs.last(database),
    );
    this.ownCatalogAt = Date.now();
    this.ownCatalogKey = { generation, tx };
    this.log.debug(
      { event: 'in-band-catalog', read: own !== null && own !== undefined, relations: own?.relations.size },
      'in-band catalog',
    );
    this.ownCatalog = own ?? undefined;
    return own ?? null;
  }

  /** SCRAM-SHA-256 (RFC 5802/7677); a wrong password and an unknown user get the same 28P01. */
  private async authenticate(queue: FrameQueue, user: string, principal: Principal | null): Promise<void> {
    const login = principal ? this.ctx.verifiers.loginFor(principal) : null;
    const exchange = new ScramServerExchange(login?.primary ?? null, {
      user,
      mockSecret: this.ctx.verifiers.secret,
      alternates: login?.alternates ?? [],
    });
    this.client.write(authenticationSASL([SCRAM_SHA_256]));
    const first = await queue.next(AUTH_TIMEOUT_MS);
    if (first.code !== FrontendCode.Password) throw new ProtocolError('expected SASL response');
    const initial = decodeSASLInitialResponse(first.payload);
    if (initial.mechanism !== SCRAM_SHA_256) {
      throw fatal('28000', 'client selected an invalid SASL authentication mechanism');
    }
    this.client.write(authenticationSASLContinue(exchange.clientFirst(initial.data)));
    const second = await queue.next(AUTH_TIMEOUT_MS);
    if (second.code !== FrontendCode.Password) throw new ProtocolError('expected SASL response');
    const result = exchange.clientFinal(decodeSASLResponse(second.payload));
    if (!result.ok) {
      this.log.warn({ event: 'auth-failed', user }, 'authentication failed');
      // A delay after each failed login slows down guessing (PostgreSQL's auth_delay).
      await new Promise((r) => setTimeout(r, this.ctx.config().config.limits.auth_failure_delay_ms));
      throw fatal('28P01', `password authentication failed for user "${user}"`);
    }
    this.client.write(authenticationSASLFinal(result.serverFinal));
    this.client.write(authenticationOk());
    this.log.info({ event: 'auth-ok', user, kind: principal?.kind }, 'authenticated');
  }

  private failStartup(e: unknown): void {
    let fields: ErrorFields;
    if (e instanceof ClientError) fields = e.fields;
    else if (e instanceof StartupParamError || e instanceof ProtocolError) {
      fields = { severity: 'FATAL', code: e.sqlstate, message: e.message };
    } else if (e instanceof Error && (e as { sqlstate?: string }).sqlstate) {
      fields = {
        severity: 'FATAL',
        code: (e as { sqlstate?: string }).sqlstate as string,
        message: e.message,
      };
    } else {
      const message = e instanceof Error ? e.message : String(e);
      if (this.closed || /closed the connection/.test(message)) {
        this.close('client left during startup');
        return;
      }
      fields = { severity: 'FATAL', code: '08P01', message };
    }
    this.log.info({ event: 'startup-failed', code: fields.code, message: fields.message }, 'startup refused');
    connectionRefused(fields.code);
    this.terminate(new ClientError(fields));
  }

  private close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.loginTimer);
    this.relay?.stop();
    if (this.cancelKey !== undefined) this.ctx.cancels.release(this.cancelKey);
    if (this.setLogin) this.ctx.managed.using(this.database, this.setLogin.login.user, -1);
    if (this.upstream) upstreamSession(-1);
    this.upstream?.socket.destroySoon();
    if (!this.client.destroyed) this.client.destroySoon();
    this.log.info(
      { event: 'close', reason, user: this.principal?.name, roles: this.roles },
      'connection closed',
    );
    this.ctx.onClose(this);
  }
}

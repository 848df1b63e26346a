// A client session's state and its way in: start-up, login, the upstream session, then the relay or the console.
import type net from 'node:net';
import path from 'node:path';
import type { ClientConfig } from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import { pgClientConfig, upstreamTls } from '../catalog/upstream-tls.js';
import { connectionRefused, upstreamSession } from '../ops/metrics.js';
import type { Config } from '../policy/config-schema.js';
import { type ConnectionRequest, resolveConnectionRoles } from '../policy/connection-roles.js';
import type { Principal } from '../policy/principals.js';
import type { ManagedRoles, SetLogin } from '../roles/managed-roles.js';
import { backendKeyData, readyForQuery } from '../wire/backend-encode.js';
import type { ErrorFields } from '../wire/error-fields.js';
import { ClientError, fatal, startupFailureFields } from './client-error.js';
import { CONSOLE_DATABASE, type ConsoleHandler } from './console-port.js';
import { consoleRoles, serveConsole } from './console-session.js';
import type { Relay } from './relay.js';
import { SearchPathTracker } from './search-path-tracker.js';
import { requireDatabaseAccess } from './session-access.js';
import { SessionCatalog, searchPathAtLogin } from './session-catalog.js';
import type { SessionContext } from './session-context.js';
import { sessionRelay } from './session-relay.js';
import type { UpstreamControl } from './session-shutdown.js';
import { logInClient, readStartupPackets, requireTlsWhenConfigured } from './session-startup.js';
import { cleanApplicationName, type FilteredStartup, filterStartupParams } from './startup-params.js';
import {
  parseUpstreamUrl,
  sendUpstreamCancel,
  terminateUpstreamBackend,
  type UpstreamSession,
  type UpstreamTarget,
} from './upstream.js';
import { logInUpstream } from './upstream-login.js';

/**
 * A client connection's state and its way in (DESIGN.md "Data flow"): start-up (SSLRequest,
 * GSSENCRequest, CancelRequest, StartupMessage), SCRAM-SHA-256, one upstream session logged in
 * with the config's credentials or the role set's login, the BackendKeyData and ReadyForQuery,
 * then the relay; or the wire admin console. ClientSession adds the session's lifecycle.
 */
export abstract class ConnectingSession {
  readonly id: number;
  protected client: net.Socket;
  protected upstream: UpstreamSession | undefined;
  protected readonly log: Logger;
  protected closed = false;
  protected relay: Relay | undefined;
  protected draining = false;
  /** The shutdown's cancel-and-rollback has begun (ClientSession.endAfterGrace). */
  protected ending = false;
  /** Cancel the upstream's running statement; terminate the upstream backend (true when it was). */
  protected upstreamControl: UpstreamControl | undefined;
  protected roles: readonly string[] = [];
  /** The policy this session decides under; replaced on reload. */
  protected policy: Config | undefined;
  protected login: ({ readonly user: string } & ConnectionRequest) | undefined;
  protected database = '';
  protected cancelKey: number | undefined;
  protected principal: Principal | undefined;
  /** The set login this session is logged in upstream as (`roles: managed`), and the roles it was made for. */
  protected setLogin: { readonly login: SetLogin; readonly roles: readonly string[] } | undefined;
  /** The upstream login's name: the set login, or the url's login. */
  protected upstreamUser = '';
  protected loginTimer: NodeJS.Timeout | undefined;
  /** Set while a reload's grant sync runs under `roles: managed`: statements wait for it. */
  protected policySettling: Promise<void> | undefined;
  /** Set for a session of the wire admin console (database `pgwarden`): it has no upstream. */
  protected consoleSession = false;
  /** When the client connected (ms since the epoch) and the startup parameter application_name. */
  protected readonly connectedAt = Date.now();
  protected applicationName = '';
  protected upstreamAt = 0;
  /** Whether `database` is under `roles: managed` (set when the session started). */
  protected managedDatabase = false;

  constructor(
    socket: net.Socket,
    id: number,
    protected readonly ctx: SessionContext,
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
  abstract get busy(): boolean;

  /** Graceful shutdown (ClientSession.shutdown). */
  abstract shutdown(): void;

  /** Sends `err` (when given) and closes both sides. */
  abstract terminate(err?: ClientError): void;

  /** Closes both sides once, giving back what the session holds (ClientSession.close). */
  protected abstract close(reason: string): void;

  /**
   * Asks the server to count this authenticated session (SessionContext.admit): undefined, or the
   * FATAL to refuse it with (53300, 57P03).
   */
  protected abstract admit(): ErrorFields | undefined;

  /** Start-up and authentication, then the admin console or the upstream session (session-startup.ts). */
  protected async startup(): Promise<void> {
    const config = this.ctx.config().config;
    // Start-up packets: SSLRequest/GSSENCRequest may come first, then the StartupMessage.
    const packets = await readStartupPackets(this.client, this.ctx.tls, this.log, (secure) => {
      secure.on('close', () => this.close('client closed'));
      this.client = secure;
    });
    if (packets.kind === 'cancel') {
      const outcome = await this.ctx.cancel(packets.processId, packets.secretKey);
      this.log.info({ event: 'cancel-request', outcome }, 'cancel request');
      this.client.end();
      return;
    }
    const queue = packets.queue;
    if (this.ctx.refusal) throw new ClientError(this.ctx.refusal);
    const filtered = filterStartupParams(packets.params);
    requireTlsWhenConfigured(config, this.client, filtered);
    const principal = await logInClient(
      this.client,
      queue,
      this.ctx.verifiers,
      config,
      filtered,
      () => this.ctx.config().config.limits.auth_failure_delay_ms,
      () => {
        clearTimeout(this.loginTimer);
        return this.admit();
      },
      this.log,
    );
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
    await this.connect(config, principal, request, filtered);
  }

  /**
   * The caller's roles and database access, then the upstream session: its login, the parser of
   * its major, the catalog and search_path to start with, the BackendKeyData and ReadyForQuery
   * to the client, and the relay.
   */
  private async connect(
    config: Config,
    principal: Principal,
    request: ConnectionRequest,
    filtered: FilteredStartup,
  ): Promise<void> {
    const resolution = resolveConnectionRoles(config, principal, request, Date.now());
    if (!resolution.ok) throw fatal(resolution.sqlstate, resolution.message);
    this.roles = resolution.roles;
    requireDatabaseAccess(config, resolution.roles, filtered.database, this.ctx.connection);
    const database = filtered.database;
    const db = config.databases[database] as Config['databases'][string];
    const configDir = path.dirname(this.ctx.config().file);
    const dbClient = pgClientConfig(db, configDir);
    const { upstream, target, setLogin } = await logInUpstream(
      this.ctx.managed,
      {
        config,
        database,
        target: parseUpstreamUrl(db.url),
        secure: upstreamTls(db, configDir),
        roles: resolution.roles,
        identity: resolution.identity,
        params: filtered.upstream,
      },
      config.limits.connect_timeout_ms,
      this.log,
    );
    this.database = database;
    this.managedDatabase = this.ctx.managed.manages(config, database);
    this.upstreamUser = target.user;
    if (setLogin) {
      this.setLogin = { login: setLogin, roles: [...resolution.roles] };
      this.ctx.managed.using(database, setLogin.user, 1);
    }
    if (this.closed) {
      upstream.socket.destroy();
      return;
    }
    this.upstream = upstream;
    this.upstreamAt = Date.now();
    this.applicationName = cleanApplicationName(filtered.upstream.get('application_name') ?? '');
    upstreamSession(1);
    const startPath = await searchPathAtLogin(
      this.ctx.catalogs,
      database,
      dbClient,
      upstream.serverVersionNum,
      filtered.searchPath,
      this.log,
    ).catch((e) => {
      upstream.socket.destroy();
      throw e;
    });
    const key = this.issueCancelKey(target, dbClient, upstream);
    this.client.cork();
    for (const m of upstream.parameterMessages) this.client.write(m);
    this.client.write(backendKeyData(key.processId, key.secretKey));
    this.client.write(readyForQuery('I'));
    this.client.uncork();
    this.log.info(
      {
        event: 'ready',
        user: filtered.user,
        database,
        login: target.user,
        server_version: upstream.serverVersionNum,
      },
      'session ready',
    );
    this.policy = config;
    this.login = { user: filtered.user, ...request };
    this.startRelay(
      config,
      upstream,
      principal.name,
      resolution.viewer,
      // A set login's statements need the grants the sync after a catalog read brings (issue 15:
      // the url login's do not, and do not wait for it).
      new SessionCatalog(
        this.ctx.catalogs,
        database,
        dbClient,
        this.log,
        this.setLogin !== undefined,
        setLoginScope(this.ctx.managed, database, this.setLogin?.login.user),
      ),
      new SearchPathTracker(startPath),
    );
  }

  /** Issues this session's own BackendKeyData, mapped to the upstream's key (cancel-registry.ts). */
  private issueCancelKey(
    target: UpstreamTarget,
    dbClient: ClientConfig,
    upstream: UpstreamSession,
  ): { readonly processId: number; readonly secretKey: number } {
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
    return key;
  }

  /** Starts relaying (session-relay.ts) under this session's policy, roles, catalog and search_path. */
  private startRelay(
    config: Config,
    upstream: UpstreamSession,
    identity: string,
    viewer: string | undefined,
    catalogs: SessionCatalog,
    paths: SearchPathTracker,
  ): void {
    const self = this;
    const relay = sessionRelay({
      ctx: this.ctx,
      client: this.client,
      upstream,
      log: this.log,
      connId: this.id,
      identity,
      viewer,
      login: this.upstreamUser,
      secondWall: this.setLogin !== undefined,
      database: this.database,
      live: {
        get policy(): Config {
          return self.policy as Config;
        },
        get roles() {
          return self.roles;
        },
        get settling() {
          return self.policySettling;
        },
      },
      catalogs,
      paths,
      maxMessageBytes: config.limits.max_message_bytes,
      cancelUpstream: () => this.upstreamControl?.cancel() ?? Promise.resolve(),
      terminate: (f) => this.terminate(f ? new ClientError(f) : undefined),
      // After the ReadyForQuery has been written: a draining session closes between statements.
      afterReadyForQuery: () => {
        if (this.draining && !this.ending) setImmediate(() => !this.busy && this.shutdown());
      },
    });
    this.relay = relay;
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
    this.roles = consoleRoles(config, principal, request);
    this.database = CONSOLE_DATABASE;
    this.consoleSession = true;
    this.policy = config;
    this.login = { user: filtered.user, ...request };
    this.applicationName = cleanApplicationName(filtered.upstream.get('application_name') ?? '');
    serveConsole(
      console,
      {
        id: this.id,
        socket: this.client,
        log: this.log,
        principal,
        login: this.login,
        applicationName: this.applicationName,
        terminate: (err) => this.terminate(err),
      },
      this.ctx.config,
    );
  }

  /** Answers a failed start-up with its FATAL (client-error.ts), or closes quietly when the client left. */
  protected failStartup(e: unknown): void {
    let fields = startupFailureFields(e);
    if (!fields) {
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
}

/** What a set login's grant sync may change (ManagedRoles.pendingScope), for its SessionCatalog; undefined for the url login. */
function setLoginScope(
  managed: ManagedRoles,
  database: string,
  login: string | undefined,
): ((catalog: Catalog) => ReadonlySet<number> | undefined) | undefined {
  if (login === undefined) return undefined;
  return (catalog) => managed.pendingScope(database, login, catalog);
}

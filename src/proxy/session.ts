// One client connection's lifecycle: shutdown, reload rechecks, the console's KILL and SHOW, the end.
import { upstreamSession } from '../ops/metrics.js';
import type { Config } from '../policy/config-schema.js';
import { connectionRolesAfterReload } from '../policy/connection-roles.js';
import { type ErrorFields, errorResponse } from '../wire/error-fields.js';
import { type ClientError, fatal } from './client-error.js';
import type { ClientInfo, SessionCounters } from './console-port.js';
import { recheckAfterReload } from './session-access.js';
import { ConnectingSession } from './session-connect.js';
import { clientInfo, sessionCounters } from './session-info.js';
import { ADMIN_SHUTDOWN, endUpstreamWork, SHUTDOWN_ROLLBACK_MS, shutdownFatal } from './session-shutdown.js';

/**
 * The state machine of one client connection (DESIGN.md "Data flow"): its way in (start-up,
 * SCRAM-SHA-256, the upstream session, the relay) is ConnectingSession's (session-connect.ts);
 * here what the server asks of a running session: graceful shutdown and its grace period, the
 * recheck after a policy reload, SHOW CLIENTS/SERVERS/STATS, KILL, and the end of both sides.
 */
export class ClientSession extends ConnectingSession {
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
    try {
      await endUpstreamWork(
        relay,
        this.upstreamControl,
        cancelWaitMs,
        () => this.terminateUpstream(),
        () => this.closed,
        facts,
      );
    } catch (e) {
      this.log.error({ event: 'shutdown-failed', err: (e as Error).message }, 'shutdown of a session failed');
    }
    this.log.info({ event: 'shutdown-session', detail: facts.join(' ') }, 'session ended by shutdown');
    this.terminate(shutdownFatal(facts));
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
    if (this.consoleSession) {
      // The console's commands check the caller's actions each time; only a principal gone ends it.
      const r = connectionRolesAfterReload(next, this.login, Date.now());
      if (!r.ok) {
        this.log.info({ event: 'revoked', reason: r.message }, 'session closed after a policy change');
        this.terminate(fatal('28000', r.message));
      } else this.roles = r.roles;
      return;
    }
    const verdict = recheckAfterReload(
      next,
      {
        login: this.login,
        database: this.database,
        connection: this.ctx.connection,
        managedDatabase: this.managedDatabase,
        setLoginRoles: this.setLogin?.roles,
      },
      this.ctx.managed,
      Date.now(),
    );
    if (!verdict.ok) {
      this.log.info({ event: 'revoked', reason: verdict.message }, 'session closed after a policy change');
      this.terminate(fatal('28000', verdict.message));
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
    this.roles = verdict.roles;
  }

  /** What SHOW CLIENTS and SHOW SERVERS show of this session (console-port.ts ClientInfo). */
  info(): ClientInfo {
    return clientInfo({
      id: this.id,
      client: this.client,
      relay: this.relay,
      upstream: this.upstream,
      user: this.principal?.name ?? '',
      database: this.database,
      upstreamUser: this.upstreamUser,
      upstreamAt: this.upstreamAt,
      connectedAt: this.connectedAt,
      applicationName: this.applicationName,
      roles: this.roles,
    });
  }

  /** The session's counters so far (SHOW STATS): its relay's, and its client socket's bytes. */
  counters(): SessionCounters {
    return sessionCounters(this.relay, this.client);
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

  /** Sends `err` (when given) and closes both sides. */
  terminate(err?: ClientError): void {
    if (this.closed) return;
    if (err && this.client.writable) this.client.write(errorResponse(err.fields));
    this.client.end();
    this.close('terminated');
  }

  /** Counts this session on the server once it has authenticated (SessionContext.admit). */
  protected admit(): ErrorFields | undefined {
    return this.ctx.admit(this);
  }

  /** Closes both sides once and gives back the cancel key, the set login's use and the upstream. */
  protected close(reason: string): void {
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

// What the wire admin console's SHOW CLIENTS, SHOW SERVERS and SHOW STATS show of one session.
import type net from 'node:net';
import tls from 'node:tls';
import type { ClientInfo, SessionCounters } from './console-port.js';
import type { Relay } from './relay.js';
import type { UpstreamSession } from './upstream.js';

/** The facts of one session that SHOW CLIENTS and SHOW SERVERS list. Times in ms since the epoch. */
export interface SessionFacts {
  readonly id: number;
  readonly client: net.Socket;
  /** The relay once the session is logged in upstream (absent before, and for a console session). */
  readonly relay: Relay | undefined;
  readonly upstream: UpstreamSession | undefined;
  /** The principal's name; empty before authentication. */
  readonly user: string;
  readonly database: string;
  /** The upstream login (a set login under `roles: managed`). */
  readonly upstreamUser: string;
  readonly upstreamAt: number;
  readonly connectedAt: number;
  readonly applicationName: string;
  readonly roles: readonly string[];
}

/** `TLSv1.3 TLS_AES_256_GCM_SHA384` for a TLS socket, empty otherwise (PgBouncer's `tls` column). */
function tlsOf(s: net.Socket | undefined): string {
  if (!(s instanceof tls.TLSSocket)) return '';
  const c = s.getCipher();
  return `${s.getProtocol() ?? ''} ${c?.name ?? ''}`.trim();
}

/**
 * One row of SHOW CLIENTS (console-port.ts ClientInfo): the state as pg_stat_activity names it
 * (`active`, `idle`, `idle in transaction`, `idle in transaction (aborted)`), both sockets'
 * addresses and TLS, the upstream backend (SHOW SERVERS; undefined without one), the counters.
 */
export function clientInfo(s: SessionFacts): ClientInfo {
  const { relay, client, upstream } = s;
  const state = !relay
    ? 'idle'
    : relay.busy
      ? 'active'
      : relay.transactionStatus === 'T'
        ? 'idle in transaction'
        : relay.transactionStatus === 'E'
          ? 'idle in transaction (aborted)'
          : 'idle';
  const up = upstream?.socket;
  const last = relay?.lastStatementAt;
  return {
    id: s.id,
    user: s.user,
    database: s.database,
    state,
    addr: client.remoteAddress ?? '',
    port: client.remotePort ?? 0,
    localAddr: client.localAddress ?? '',
    localPort: client.localPort ?? 0,
    connectTime: s.connectedAt,
    requestTime: last === undefined ? undefined : Math.round(performance.timeOrigin + last),
    tls: tlsOf(client),
    applicationName: s.applicationName,
    roles: s.roles,
    server:
      upstream && up
        ? {
            user: s.upstreamUser,
            addr: up.remoteAddress ?? '',
            port: up.remotePort ?? 0,
            localAddr: up.localAddress ?? '',
            localPort: up.localPort ?? 0,
            pid: upstream.processId,
            connectTime: s.upstreamAt,
            tls: tlsOf(up),
          }
        : undefined,
    counters: sessionCounters(relay, client),
  };
}

/** The session's counters so far (SHOW STATS): its relay's (zero without one), and its client socket's bytes. */
export function sessionCounters(relay: Relay | undefined, client: net.Socket): SessionCounters {
  return {
    transactions: relay?.transactionsEnded ?? 0,
    queries: relay?.queries ?? 0,
    refused: relay?.refused ?? 0,
    queryTimeUs: Math.round(relay?.queryTimeUs ?? 0),
    received: client.bytesRead,
    sent: client.bytesWritten,
  };
}

// What the wire admin console (`psql -d pgwarden`) is given by the proxy: the caller, the sessions, reload, kill, shutdown.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import type { Editor } from '../policy/grant-limits.js';
import { parameterStatus } from '../wire/backend-encode.js';

/** The virtual database a client names to reach the admin console (as PgBouncer's `pgbouncer`). */
export const CONSOLE_DATABASE = 'pgwarden';

/**
 * The ParameterStatus messages a console session starts with, as a PostgreSQL 15 server sends them
 * (psql reads `server_version` for its features; the text after the number names pgwarden).
 */
export function consoleParameters(user: string, applicationName: string): Buffer[] {
  const params: [string, string][] = [
    ['application_name', applicationName],
    ['client_encoding', 'UTF8'],
    ['DateStyle', 'ISO, MDY'],
    ['integer_datetimes', 'on'],
    ['IntervalStyle', 'postgres'],
    ['is_superuser', 'off'],
    ['server_encoding', 'UTF8'],
    ['server_version', '15.0 (pgwarden admin console)'],
    ['session_authorization', user],
    ['standard_conforming_strings', 'on'],
    ['TimeZone', 'UTC'],
  ];
  return params.map(([k, v]) => parameterStatus(k, v));
}

/** The upstream side of a session (SHOW SERVERS). Times in ms since the epoch. */
export interface ServerInfo {
  /** The upstream login (a set login under `roles: managed`). */
  readonly user: string;
  readonly addr: string;
  readonly port: number;
  readonly localAddr: string;
  readonly localPort: number;
  /** The upstream backend's process ID (its BackendKeyData). */
  readonly pid: number;
  readonly connectTime: number;
  readonly tls: string;
}

/** One logged-in client connection (SHOW CLIENTS). Times in ms since the epoch; bytes as counted by its socket. */
export interface ClientInfo {
  /** The client id (`KILL <id>`; the `conn` of its log and audit lines). */
  readonly id: number;
  readonly user: string;
  readonly database: string;
  /** `active` (a statement running), `idle`, `idle in transaction`, `idle in transaction (aborted)`, as pg_stat_activity says. */
  readonly state: string;
  readonly addr: string;
  readonly port: number;
  readonly localAddr: string;
  readonly localPort: number;
  readonly connectTime: number;
  /** When its last statement ended (completed or refused); undefined before the first. */
  readonly requestTime: number | undefined;
  /** TLS protocol and cipher, empty without TLS. */
  readonly tls: string;
  readonly applicationName: string;
  readonly roles: readonly string[];
  readonly server: ServerInfo | undefined;
  readonly counters: SessionCounters;
}

/** What a session counts (SHOW STATS): transactions, statements run and refused, time upstream (µs), bytes. */
export interface SessionCounters {
  readonly transactions: number;
  readonly queries: number;
  readonly refused: number;
  readonly queryTimeUs: number;
  readonly received: number;
  readonly sent: number;
}

/** The proxy as the console sees it. */
export interface ConsoleHost {
  /** The config in force. */
  config(): LoadedConfig;
  /** The epoch of the policy in force. */
  epoch(): string;
  /** The logged-in sessions now, console sessions included. */
  clients(): ClientInfo[];
  /** Per database: the counters of its closed sessions plus its open ones. */
  totals(): Map<string, SessionCounters>;
  /**
   * Ends session `id` as pg_terminate_backend would: a running statement is canceled upstream, an
   * open transaction rolled back, then FATAL 57P01 admin_shutdown. False when there is no such session.
   */
  kill(id: number): boolean;
  /** Reads the config (and the store) again as SIGHUP does; rejects with the reason when it is invalid. Absent: not possible here. */
  readonly reload: (() => Promise<void>) | undefined;
  /** Shuts the instance down as SIGTERM does (graceful). */
  shutdown(): void;
  /** Writes an admin audit line (`audit: true, admin: true` and these fields) to the instance's audit log. */
  audit(fields: Record<string, unknown>): void;
}

/** A logged-in client that named the console database, handed to the console once it got ReadyForQuery. */
export interface ConsoleConnection {
  readonly id: number;
  /** The client socket (TLS when negotiated); nothing of it has been read past the login. */
  readonly socket: net.Socket;
  /** Who is calling, resolved again under the config in force (undefined: the principal is gone). */
  caller(): Editor | undefined;
  readonly log: Logger;
  /** Sends `fatal` (when given) and closes the connection. */
  terminate(fatal?: { code: string; message: string }): void;
}

/** The console: serves one connection until it ends. */
export interface ConsoleHandler {
  serve(conn: ConsoleConnection): void;
}

/** Makes the console of a proxy, given the host it reads and acts on. */
export type ConsoleFactory = (host: ConsoleHost) => ConsoleHandler;

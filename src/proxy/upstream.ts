// Opens one authenticated upstream session (startup, SCRAM/md5/cleartext/trust) with the server-held credentials.
import crypto from 'node:crypto';
import net from 'node:net';
import tls from 'node:tls';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { ScramClientExchange } from '../auth/scram-client.js';
import type { UpstreamTls } from '../catalog/upstream-tls.js';
import { decodeAuthentication, decodeBackendKeyData, decodeParameterStatus } from '../wire/backend.js';
import { BackendCode } from '../wire/codes.js';
import { decodeErrorResponse, type ErrorFields } from '../wire/error-fields.js';
import { type Frame, MessageFramer } from '../wire/framer.js';
import { sslRequest } from '../wire/frontend-encode.js';

/**
 * The largest message accepted from the upstream (bytes, header included): a DataRow is built in
 * one of PostgreSQL's StringInfo buffers, at most MaxAllocSize (1 GB - 1), so a field of up to
 * 1 GB passes (issue 16). What it costs is counted against the memory budget while it is held.
 */
export const UPSTREAM_MAX_MESSAGE_BYTES = 2 ** 30 + 5;

/** Where and as whom to log in upstream, parsed from a `postgres://` URL of the config. */
export interface UpstreamTarget {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string | undefined;
  readonly database: string;
}

/** Parses `postgres://user:password@host:port/database` (percent-decoded parts; port 5432 by default). */
export function parseUpstreamUrl(url: string): UpstreamTarget {
  const u = new URL(url);
  return {
    host: u.hostname.replace(/^\[(.*)\]$/, '$1') || '127.0.0.1',
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username),
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username),
  };
}

/**
 * An upstream session right after its first ReadyForQuery: the socket (paused, no listeners
 * of ours left on it), the ParameterStatus values and BackendKeyData it sent, and any bytes
 * that arrived after ReadyForQuery (normally none).
 */
export interface UpstreamSession {
  readonly socket: net.Socket;
  readonly parameters: ReadonlyMap<string, string>;
  /** The raw ParameterStatus messages, in order, to relay to the client as they are. */
  readonly parameterMessages: readonly Buffer[];
  readonly processId: number;
  readonly secretKey: number;
  readonly serverVersionNum: number;
  /** The framer of the upstream direction, in typed mode, holding any partial message. */
  readonly framer: MessageFramer;
  /** Whole messages that arrived after the first ReadyForQuery (normally none). */
  readonly pending: readonly Frame[];
}

/**
 * An upstream that refused the login or the startup: its ErrorResponse fields (or a synthesized
 * 08006). `fields` may reach the client and never name the upstream's host or address; `logDetail`
 * (the socket error with the address, e.g. `connect ECONNREFUSED 10.0.0.5:5432`) is for the log only
 * (issue 16 item 8).
 */
export class UpstreamError extends Error {
  readonly fields: ErrorFields;
  readonly logDetail: string | undefined;
  constructor(fields: ErrorFields, logDetail?: string) {
    super(`${fields.code}: ${fields.message}`);
    this.name = 'UpstreamError';
    this.fields = fields;
    this.logDetail = logDetail;
  }
}

function connectionFailure(message: string, logDetail?: string): UpstreamError {
  return new UpstreamError({ severity: 'FATAL', code: '08006', message }, logDetail);
}

function md5Password(user: string, password: string, salt: Buffer): string {
  const inner = crypto
    .createHash('md5')
    .update(password + user)
    .digest('hex');
  return `md5${crypto
    .createHash('md5')
    .update(Buffer.concat([Buffer.from(inner), salt]))
    .digest('hex')}`;
}

/**
 * Connects to `target`, sends a StartupMessage with `params` (user and database from the
 * target override any given), answers the server's authentication request with the
 * configured password, and resolves at the first ReadyForQuery.
 * Rejects with {@link UpstreamError}: the server's own ErrorResponse (e.g. 28P01, 3D000,
 * 53300), or 08006 connection_failure for a socket error, a timeout (`timeoutMs`), or an
 * authentication method it cannot answer (GSS, SSPI, a password the URL does not hold).
 * With `secure` (the database's sslmode is not `disable`), an SSLRequest goes first and the session
 * runs over TLS; a server that answers `N`, or whose certificate fails the mode's checks, is 08006
 * (the reason in `logDetail`).
 * Source: PostgreSQL protocol 55.2.1 "Start-up", 55.2.10 "SSL Session Encryption" and 55.3
 * "SASL Authentication".
 */
export function connectUpstream(
  target: UpstreamTarget,
  params: ReadonlyMap<string, string>,
  timeoutMs: number,
  secure?: UpstreamTls,
): Promise<UpstreamSession> {
  return new Promise((resolve, reject) => {
    const raw = net.connect({ host: target.host, port: target.port });
    raw.setNoDelay(true);
    let socket: net.Socket = raw;
    const framer = new MessageFramer({ maxMessageBytes: UPSTREAM_MAX_MESSAGE_BYTES, startup: false });
    const parameters = new Map<string, string>();
    const parameterMessages: Buffer[] = [];
    let key = { processId: 0, secretKey: 0 };
    let scram: ScramClientExchange | undefined;
    let settled = false;

    const fail = (err: UpstreamError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const s of new Set([raw, socket])) {
        s.removeAllListeners();
        s.on('error', () => {});
        s.destroy();
      }
      reject(err);
    };
    const timer = setTimeout(
      () => fail(connectionFailure('timeout while connecting to the upstream server')),
      timeoutMs,
    );

    const needPassword = (): string => {
      if (target.password === undefined)
        throw connectionFailure('the upstream server asked for a password the config does not hold');
      return target.password;
    };

    const onFrame = (frame: Frame): boolean => {
      switch (frame.code) {
        case BackendCode.Authentication: {
          const auth = decodeAuthentication(frame.payload);
          if (auth.type === 'ok') return false;
          if (auth.type === 'cleartext') socket.write(serialize.password(needPassword()));
          else if (auth.type === 'md5')
            socket.write(serialize.password(md5Password(target.user, needPassword(), auth.salt)));
          else if (auth.type === 'sasl') {
            if (!auth.mechanisms.includes('SCRAM-SHA-256'))
              throw connectionFailure('the upstream server offers no SCRAM-SHA-256');
            scram = new ScramClientExchange(needPassword());
            socket.write(
              serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', scram.clientFirst().toString('utf8')),
            );
          } else if (auth.type === 'sasl-continue') {
            if (!scram) throw connectionFailure('unexpected SASLContinue from the upstream server');
            socket.write(
              serialize.sendSCRAMClientFinalMessage(scram.clientFinal(auth.data).toString('utf8')),
            );
          } else if (auth.type === 'sasl-final') {
            if (!scram) throw connectionFailure('unexpected SASLFinal from the upstream server');
            scram.verifyServerFinal(auth.data);
          } else throw connectionFailure(`unsupported upstream authentication request ${auth.code}`);
          return false;
        }
        case BackendCode.ParameterStatus: {
          const p = decodeParameterStatus(frame.payload);
          parameters.set(p.name, p.value);
          parameterMessages.push(Buffer.from(frame.bytes));
          return false;
        }
        case BackendCode.BackendKeyData:
          key = decodeBackendKeyData(frame.payload);
          return false;
        case BackendCode.ErrorResponse:
          throw new UpstreamError(decodeErrorResponse(frame.payload));
        case BackendCode.NoticeResponse:
        case BackendCode.NegotiateProtocolVersion:
          return false;
        case BackendCode.ReadyForQuery:
          return true;
        default:
          throw connectionFailure(
            `unexpected message ${String.fromCharCode(frame.code)} during upstream startup`,
          );
      }
    };

    const onData = (chunk: Buffer) => {
      if (settled) return;
      try {
        const frames = framer.push(chunk);
        for (let i = 0; i < frames.length; i++) {
          if (!onFrame(frames[i] as Frame)) continue;
          // ReadyForQuery: hand the socket over. Anything after it stays for the session.
          settled = true;
          clearTimeout(timer);
          socket.removeAllListeners('data');
          socket.removeAllListeners('error');
          socket.removeAllListeners('close');
          socket.pause();
          resolve({
            socket,
            parameters,
            parameterMessages,
            processId: key.processId,
            secretKey: key.secretKey,
            serverVersionNum: Number(
              parameters.get('server_version_num') ?? versionNum(parameters.get('server_version')),
            ),
            framer,
            pending: frames.slice(i + 1),
          });
          return;
        }
      } catch (e) {
        fail(
          e instanceof UpstreamError ? e : connectionFailure('upstream startup failed', (e as Error).message),
        );
      }
    };
    const watch = (s: net.Socket) => {
      s.on('error', (e) => fail(connectionFailure('could not connect to the upstream server', e.message)));
      s.on('close', () =>
        fail(connectionFailure('the upstream server closed the connection during startup')),
      );
    };
    const startup = () => {
      const options: Record<string, string> = Object.fromEntries(params);
      options.user = target.user;
      options.database = target.database;
      socket.on('data', onData);
      socket.write(serialize.startup(options));
    };
    watch(raw);
    raw.once('connect', () => {
      if (!secure) return startup();
      raw.write(sslRequest());
      raw.once('data', (answer: Buffer) => {
        if (answer[0] !== 0x53 || answer.length !== 1) {
          // 'N', or bytes after 'S' that would be read as if encrypted (CVE-2021-23222).
          fail(
            connectionFailure(
              'could not open an encrypted session on the upstream server',
              `sslmode ${secure.mode}: the server answered ${answer[0] === 0x4e ? 'N (no SSL)' : 'unexpectedly'}`,
            ),
          );
          return;
        }
        raw.removeAllListeners('close');
        const t = tls.connect({ ...secure.options, socket: raw });
        socket = t;
        watch(t);
        t.once('secureConnect', startup);
      });
    });
  });
}

/** `15.18 (Debian …)` → 150018; PostgreSQL 10+ numbering (major * 10000 + minor). */
function versionNum(v: string | undefined): number {
  const m = /^(\d+)(?:\.(\d+))?/.exec(v ?? '');
  if (!m) return 0;
  return Number(m[1]) * 10000 + Number(m[2] ?? 0);
}

/**
 * Sends a CancelRequest for an upstream backend key and closes the connection; the server
 * answers nothing (protocol 55.2.7 "Canceling Requests in Progress"). Never rejects.
 */
export function sendUpstreamCancel(
  target: UpstreamTarget,
  processId: number,
  secretKey: number,
): Promise<void> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: target.host, port: target.port }, () => {
      socket.end(serialize.cancel(processId, secretKey));
    });
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
    socket.setTimeout(5000, () => socket.destroy());
  });
}

/**
 * Ends upstream backend `pid` with `pg_terminate_backend` over a new connection with the same
 * login (`config`, see pgClientConfig; a role may signal its own backends): its running
 * statement and open transaction are rolled back. Resolves true when the server reported the
 * backend terminated (within 5 s); never rejects. Source: PostgreSQL 15 docs 9.27.2 "Server
 * Signaling Functions".
 */
export async function terminateUpstreamBackend(config: pg.ClientConfig, pid: number): Promise<boolean> {
  const client = new pg.Client({ ...config, connectionTimeoutMillis: 5000, query_timeout: 5000 });
  client.on('error', () => {});
  try {
    await client.connect();
    const r = await client.query<{ done: boolean }>('SELECT pg_terminate_backend($1, 5000) AS done', [pid]);
    return r.rows[0]?.done === true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

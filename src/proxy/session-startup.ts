// A session before it is authenticated: SSLRequest, GSSENCRequest, CancelRequest, StartupMessage, then SCRAM-SHA-256.
import type net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { SCRAM_SHA_256 } from '../auth/scram-primitives.js';
import { ScramServerExchange } from '../auth/scram-server.js';
import type { Config } from '../policy/config-schema.js';
import { findPrincipal, type Principal } from '../policy/principals.js';
import {
  authenticationOk,
  authenticationSASL,
  authenticationSASLContinue,
  authenticationSASLFinal,
  negotiateProtocolVersion,
  sslRefused,
} from '../wire/backend-encode.js';
import { FrontendCode } from '../wire/codes.js';
import type { ErrorFields } from '../wire/error-fields.js';
import { MessageFramer } from '../wire/framer.js';
import { decodeSASLInitialResponse, decodeSASLResponse, decodeStartupPacket } from '../wire/frontend.js';
import { ProtocolError } from '../wire/protocol-error.js';
import { ClientError, fatal } from './client-error.js';
import { FrameQueue } from './frame-queue.js';
import type { FilteredStartup } from './startup-params.js';
import type { VerifierCache } from './verifier-cache.js';

/** Each start-up message waits at most this long; the whole login is bounded by limits.authentication_timeout_ms. */
const AUTH_TIMEOUT_MS = 60_000;
/** Pre-authentication messages are small (PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH is 65535 bytes). */
const AUTH_MAX_MESSAGE_BYTES = 65_536;

/** What the start-up packets came to: a StartupMessage's parameters, or a CancelRequest's key. */
export type StartupPackets =
  | { readonly kind: 'startup'; readonly queue: FrameQueue; readonly params: Map<string, string> }
  | { readonly kind: 'cancel'; readonly processId: number; readonly secretKey: number };

/**
 * Reads the start-up packets of a new connection (protocol 55.2.1, 55.2.10, 55.2.11):
 * SSLRequest is answered `S` and the socket upgraded to TLS when `secureContext` is given (else
 * `N`), GSSENCRequest `N`; then a CancelRequest or a StartupMessage of protocol 3.x, whose
 * `_pq_.` options and minor version above 0 get NegotiateProtocolVersion. `onSecure` is called
 * with the TLS socket as soon as it replaces the plain one. Rejects with ProtocolError 08P01
 * (bytes behind an SSLRequest, CVE-2021-23214; a malformed packet), FATAL 0A000 for another
 * protocol major, or an Error when the client leaves or a packet takes over 60 s.
 */
export async function readStartupPackets(
  socket: net.Socket,
  secureContext: tls.SecureContext | undefined,
  log: Logger,
  onSecure: (secure: tls.TLSSocket) => void,
): Promise<StartupPackets> {
  let client = socket;
  let queue = new FrameQueue(
    client,
    new MessageFramer({ maxMessageBytes: AUTH_MAX_MESSAGE_BYTES, startup: true }),
  );
  for (;;) {
    const frame = await queue.next(AUTH_TIMEOUT_MS);
    const packet = decodeStartupPacket(frame.payload);
    if (packet.kind === 'cancel') {
      return { kind: 'cancel', processId: packet.processId, secretKey: packet.secretKey };
    }
    if (packet.kind === 'ssl' || packet.kind === 'gssenc') {
      // Bytes behind an SSLRequest before our answer would be read as TLS-protected (CVE-2021-23214).
      if (queue.queued > 0 || queue.currentFramer.buffered > 0) {
        throw new ProtocolError('received unencrypted data after SSL request');
      }
      if (packet.kind === 'ssl' && secureContext && !(client instanceof tls.TLSSocket)) {
        queue.detach();
        client.write('S');
        const secure = new tls.TLSSocket(client, { isServer: true, secureContext });
        secure.on('error', (e) => log.debug({ err: e.message }, 'tls error'));
        onSecure(secure);
        client = secure;
        queue = new FrameQueue(
          secure,
          new MessageFramer({ maxMessageBytes: AUTH_MAX_MESSAGE_BYTES, startup: true }),
        );
      } else {
        client.write(sslRefused());
      }
      continue;
    }
    if (packet.major !== 3)
      throw fatal('0A000', `unsupported frontend protocol ${packet.major}.${packet.minor}`);
    const unsupported = [...packet.params.keys()].filter((k) => k.startsWith('_pq_.'));
    if (packet.minor > 0 || unsupported.length > 0) client.write(negotiateProtocolVersion(0, unsupported));
    return {
      kind: 'startup',
      queue,
      params: new Map([...packet.params].filter(([k]) => !k.startsWith('_pq_.'))),
    };
  }
}

/**
 * `tls.mode: require`: as a pg_hba.conf of `hostssl` lines only, a plaintext client is refused
 * after its StartupMessage (issue 16 item 6) with FATAL 28000 naming the user and database.
 */
export function requireTlsWhenConfigured(config: Config, client: net.Socket, startup: FilteredStartup): void {
  if (config.tls?.mode === 'require' && !(client instanceof tls.TLSSocket)) {
    throw new ClientError({
      severity: 'FATAL',
      code: '28000',
      message: `connection requires TLS: user "${startup.user}", database "${startup.database}", no encryption`,
      hint: 'Connect with sslmode=require (or verify-full with the proxy’s CA).',
    });
  }
}

/**
 * SCRAM-SHA-256 (RFC 5802/7677, protocol 55.3) of `user` on `client`, reading its answers from
 * `queue`; `principal` null (no such user or key) runs the exchange against a mock secret so that
 * a wrong password and an unknown user get the same FATAL 28P01 invalid_password, each after
 * `failureDelayMs()` ms (PostgreSQL's auth_delay, read from the config in force then). Resolves once AuthenticationOk is written. Rejects
 * with FATAL 28000 for another SASL mechanism, ProtocolError 08P01 for a message that is not a
 * SASL response.
 */
export async function authenticateClient(
  client: net.Socket,
  queue: FrameQueue,
  verifiers: VerifierCache,
  user: string,
  principal: Principal | null,
  failureDelayMs: () => number,
  log: Logger,
): Promise<void> {
  const login = principal ? verifiers.loginFor(principal) : null;
  const exchange = new ScramServerExchange(login?.primary ?? null, {
    user,
    mockSecret: verifiers.secret,
    alternates: login?.alternates ?? [],
  });
  client.write(authenticationSASL([SCRAM_SHA_256]));
  const first = await queue.next(AUTH_TIMEOUT_MS);
  if (first.code !== FrontendCode.Password) throw new ProtocolError('expected SASL response');
  const initial = decodeSASLInitialResponse(first.payload);
  if (initial.mechanism !== SCRAM_SHA_256) {
    throw fatal('28000', 'client selected an invalid SASL authentication mechanism');
  }
  client.write(authenticationSASLContinue(exchange.clientFirst(initial.data)));
  const second = await queue.next(AUTH_TIMEOUT_MS);
  if (second.code !== FrontendCode.Password) throw new ProtocolError('expected SASL response');
  const result = exchange.clientFinal(decodeSASLResponse(second.payload));
  if (!result.ok) {
    log.warn({ event: 'auth-failed', user }, 'authentication failed');
    // A delay after each failed login slows down guessing (PostgreSQL's auth_delay).
    await new Promise((r) => setTimeout(r, failureDelayMs()));
    throw fatal('28P01', `password authentication failed for user "${user}"`);
  }
  client.write(authenticationSASLFinal(result.serverFinal));
  client.write(authenticationOk());
  log.info({ event: 'auth-ok', user, kind: principal?.kind }, 'authenticated');
}

/**
 * The login of the StartupMessage's user (`startup`) under `config`: its principal (user or API
 * key, findPrincipal), SCRAM-SHA-256 ({@link authenticateClient}), then `admit` (the server's
 * count: FATAL 53300 or 57P03 when it returns fields); a message the client sent before
 * AuthenticationOk is ProtocolError 08P01. Resolves the principal, null when there is none (whose
 * exchange always fails), with `queue` detached so the socket can be relayed.
 */
export async function logInClient(
  client: net.Socket,
  queue: FrameQueue,
  verifiers: VerifierCache,
  config: Config,
  startup: FilteredStartup,
  failureDelayMs: () => number,
  admit: () => ErrorFields | undefined,
  log: Logger,
): Promise<Principal | null> {
  const principal = findPrincipal(config, startup.user, Date.now());
  await authenticateClient(client, queue, verifiers, startup.user, principal, failureDelayMs, log);
  const refused = admit();
  if (refused) throw new ClientError(refused);
  if (queue.queued > 0 || queue.currentFramer.buffered > 0) {
    throw new ProtocolError('unexpected message before authentication completed');
  }
  queue.detach();
  return principal;
}

// The server side of SCRAM-SHA-256: authenticating a client of the proxy, with a mock exchange for unknown users.
import crypto from 'node:crypto';
import { malformed, ScramError } from './scram-error.js';
import {
  decodeBase64,
  hmac,
  KEY_LEN,
  PRINTABLE,
  RAW_NONCE_LEN,
  SCRAM_DEFAULT_ITERATIONS,
  SCRAM_DEFAULT_SALT_LEN,
  sha256,
  xor,
} from './scram-primitives.js';
import type { ScramVerifier } from './scram-verifier.js';

/** Secret behind mock salts when the caller gives none: stable for the life of the process. */
const PROCESS_MOCK_SECRET = crypto.randomBytes(32);

/** Options of {@link ScramServerExchange}. */
export interface ScramServerOptions {
  /**
   * The user name from the startup packet. Only used to derive the mock salt of an unknown user
   * (the `n=` attribute is ignored, as PostgreSQL ignores it).
   */
  readonly user?: string;
  /**
   * Secret mixed into mock salts (any length). Give a stable, configured secret so an unknown
   * user's fake salt stays the same across proxy restarts, as a real user's salt does
   * (PostgreSQL uses the cluster's mock_authentication_nonce). Default: random per process.
   */
  readonly mockSecret?: Buffer;
  /** Iteration count announced for an unknown user; should match real verifiers. Default 4096. */
  readonly mockIterations?: number;
  /** Server nonce part (printable, no ','); for tests only. Default: 18 random bytes, base64. */
  readonly serverNonce?: string;
  /**
   * Further verifiers whose proofs are accepted too: a rotated API key's previous token (issue 4,
   * 24 hours). They must share the primary verifier's salt and iteration count (the server-first
   * message carries only one); others are ignored.
   */
  readonly alternates?: readonly ScramVerifier[];
}

/** Result of {@link ScramServerExchange.clientFinal}. */
export type ScramServerResult = { ok: true; serverFinal: Buffer } | { ok: false };

/**
 * The server side of one SCRAM-SHA-256 exchange, driven by the proxy's session:
 * SASLInitialResponse data → {@link clientFirst} → AuthenticationSASLContinue data;
 * SASLResponse data → {@link clientFinal} → AuthenticationSASLFinal data (then AuthenticationOk),
 * or `{ ok: false }` → ErrorResponse 28P01 "password authentication failed for user …".
 *
 * Only the SCRAM-SHA-256 mechanism is supported (no -PLUS): a client that asks for channel
 * binding (`p=`) is refused; `n` and `y` (RFC 5802 §6: "y" means the client could bind but thinks
 * the server cannot, which is true here) are accepted. With `verifier` null (unknown user, or a
 * role without a SCRAM secret) the exchange runs to the end with a deterministic fake salt —
 * HMAC-SHA-256(mockSecret, user), 16 bytes — and always fails, so its messages and timing do not
 * reveal whether the user exists (PostgreSQL's scram_mock_salt / doomed exchange).
 * Sources: RFC 5802 §5 and §7, RFC 7677, PostgreSQL 15 src/backend/libpq/auth-scram.c.
 */
export class ScramServerExchange {
  private readonly verifier: ScramVerifier;
  private readonly doomed: boolean;
  private alternates: readonly ScramVerifier[] = [];
  private readonly serverNonce: string;
  private state: 'init' | 'salt-sent' | 'done' = 'init';
  private cbindHeader = '';
  private clientNonce = '';
  private clientFirstBare = '';
  private serverFirst = '';

  /**
   * @param verifier the role's parsed verifier, or null to run a mock exchange that fails.
   * @param opts see {@link ScramServerOptions}.
   */
  constructor(verifier: ScramVerifier | null, opts: ScramServerOptions = {}) {
    if (verifier) {
      this.verifier = verifier;
      this.doomed = false;
      this.alternates = (opts.alternates ?? []).filter(
        (a) => a.iterations === verifier.iterations && a.salt.equals(verifier.salt),
      );
    } else {
      const secret = opts.mockSecret ?? PROCESS_MOCK_SECRET;
      const user = Buffer.from(opts.user ?? '', 'utf8');
      this.verifier = {
        iterations: opts.mockIterations ?? SCRAM_DEFAULT_ITERATIONS,
        salt: hmac(secret, Buffer.concat([Buffer.from('pgwarden mock salt\0'), user])).subarray(
          0,
          SCRAM_DEFAULT_SALT_LEN,
        ),
        // Keys nobody knows the password for: the proof check still runs (same cost), and fails.
        storedKey: crypto.randomBytes(KEY_LEN),
        serverKey: crypto.randomBytes(KEY_LEN),
      };
      this.doomed = true;
    }
    const nonce = opts.serverNonce ?? crypto.randomBytes(RAW_NONCE_LEN).toString('base64');
    if (!PRINTABLE.test(nonce)) throw new TypeError('server nonce must be printable ASCII without ","');
    this.serverNonce = nonce;
  }

  /**
   * Reads the client-first-message (the data of SASLInitialResponse) and returns the
   * server-first-message `r=<client nonce><server nonce>,s=<salt b64>,i=<iterations>`
   * (RFC 5802 §5.1, §7).
   * Throws ScramError 08P01 for a malformed message, a `p=` channel-binding request
   * (we do not offer SCRAM-SHA-256-PLUS) or a call out of order; 0A000 for an authorization
   * identity (`a=`) or a mandatory extension (`m=`), which PostgreSQL does not support either.
   */
  clientFirst(data: Buffer): Buffer {
    if (this.state !== 'init') throw malformed('unexpected client-first-message');
    this.state = 'done'; // any throw below ends the exchange
    const msg = readMessage(data);

    // gs2-header = gs2-cbind-flag "," [ authzid ] ","
    const flag = msg[0];
    let rest: string;
    if (flag === 'n' || flag === 'y') {
      if (msg[1] !== ',') throw malformed(`Comma expected, but found character "${msg[1] ?? ''}".`);
      rest = msg.slice(2);
    } else if (flag === 'p') {
      throw malformed(
        'The client selected SCRAM-SHA-256-PLUS, but the SCRAM message does not include channel binding data.',
      );
    } else {
      throw malformed(`Unexpected channel-binding flag "${flag ?? ''}".`);
    }
    if (rest.startsWith('a=')) {
      throw new ScramError('client uses authorization identity, but it is not supported', undefined, '0A000');
    }
    if (!rest.startsWith(','))
      throw malformed(`Unexpected attribute "${rest[0] ?? ''}" in client-first-message.`);
    this.cbindHeader = `${flag},,`;
    const bare = rest.slice(1);

    // client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions]
    const attrs = bare.split(',');
    if (attrs[0]?.startsWith('m=')) {
      throw new ScramError('client requires an unsupported SCRAM extension', undefined, '0A000');
    }
    const user = attrs[0];
    if (user === undefined || !user.startsWith('n=')) throw malformed('Expected attribute "n".');
    const nonceAttr = attrs[1];
    if (nonceAttr === undefined || !nonceAttr.startsWith('r=')) throw malformed('Expected attribute "r".');
    const clientNonce = nonceAttr.slice(2);
    if (!PRINTABLE.test(clientNonce)) throw malformed('Invalid client nonce.');
    for (const ext of attrs.slice(2)) checkExtension(ext);

    this.clientNonce = clientNonce;
    this.clientFirstBare = bare;
    this.serverFirst = `r=${clientNonce}${this.serverNonce},s=${this.verifier.salt.toString('base64')},i=${this.verifier.iterations}`;
    this.state = 'salt-sent';
    return Buffer.from(this.serverFirst, 'latin1');
  }

  /**
   * Reads the client-final-message (the data of SASLResponse), checks the channel-binding echo
   * (`c=biws` for flag `n`, `c=eSws` for `y`: base64 of the gs2-header), the nonce (exactly the
   * combined nonce of the server-first-message) and the ClientProof (constant-time comparison of
   * H(ClientProof XOR ClientSignature) with StoredKey, RFC 5802 §3).
   * Returns `{ ok: true, serverFinal }` (`v=<ServerSignature b64>`, to send in
   * AuthenticationSASLFinal) or `{ ok: false }` for a wrong password or an unknown user.
   * Throws ScramError 08P01 for a malformed message, a channel-binding or nonce mismatch
   * (PostgreSQL: "SCRAM channel binding check failed", "Nonce does not match.") or a call out of
   * order.
   */
  clientFinal(data: Buffer): ScramServerResult {
    if (this.state !== 'salt-sent') throw malformed('unexpected client-final-message');
    this.state = 'done';
    const msg = readMessage(data);

    // client-final-message = channel-binding "," nonce ["," extensions] "," proof
    const attrs = msg.split(',');
    const proofAttr = attrs.pop();
    if (proofAttr === undefined || !proofAttr.startsWith('p=')) {
      throw malformed('Could not find proof in client-final-message.');
    }
    const withoutProof = attrs.join(',');
    const cbind = attrs[0];
    if (cbind === undefined || !cbind.startsWith('c=')) throw malformed('Expected attribute "c".');
    const nonceAttr = attrs[1];
    if (nonceAttr === undefined || !nonceAttr.startsWith('r=')) throw malformed('Expected attribute "r".');
    for (const ext of attrs.slice(2)) checkExtension(ext);
    const proof = decodeBase64(proofAttr.slice(2));
    if (!proof || proof.length !== KEY_LEN) throw malformed('Malformed proof in client-final-message.');

    const expectedCbind = Buffer.from(this.cbindHeader, 'latin1').toString('base64');
    if (cbind.slice(2) !== expectedCbind) {
      throw new ScramError('SCRAM channel binding check failed');
    }
    if (nonceAttr.slice(2) !== this.clientNonce + this.serverNonce) {
      throw new ScramError('invalid SCRAM response', 'Nonce does not match.');
    }

    const authMessage = Buffer.from(`${this.clientFirstBare},${this.serverFirst},${withoutProof}`, 'latin1');
    // Every candidate is checked, without stopping at the first match, so timing does not tell which.
    let matched: ScramVerifier | undefined;
    for (const candidate of [this.verifier, ...this.alternates]) {
      const clientSignature = hmac(candidate.storedKey, authMessage);
      const clientKey = xor(proof, clientSignature);
      if (crypto.timingSafeEqual(sha256(clientKey), candidate.storedKey) && !matched) matched = candidate;
    }
    if (!matched || this.doomed) return { ok: false };
    const serverSignature = hmac(matched.serverKey, authMessage);
    return { ok: true, serverFinal: Buffer.from(`v=${serverSignature.toString('base64')}`, 'latin1') };
  }
}

/**
 * Decodes one SCRAM message. Bytes map 1:1 to characters (latin1) so that the AuthMessage is
 * rebuilt from the exact bytes received; a NUL byte is malformed (PostgreSQL reads the message as
 * a C string and checks its length).
 */
function readMessage(data: Buffer): string {
  if (data.length === 0) throw malformed('The message is empty.');
  if (data.includes(0)) throw malformed('The message contains a NUL byte.');
  return data.toString('latin1');
}

/** RFC 5802 §7 `attr-val`: a letter, '=', and a value; unknown optional extensions are ignored. */
function checkExtension(ext: string): void {
  if (!/^[A-Za-z]=/.test(ext)) throw malformed(`Malformed attribute "${ext.slice(0, 20)}".`);
}

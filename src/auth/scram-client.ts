// The client side of SCRAM-SHA-256: the proxy logging into the upstream server, with mutual authentication.
import crypto from 'node:crypto';
import { saslPrep } from './saslprep.js';
import { ScramError } from './scram-error.js';
import {
  decodeBase64,
  hmac,
  KEY_LEN,
  PRINTABLE,
  RAW_NONCE_LEN,
  saltedPassword,
  sha256,
  xor,
} from './scram-primitives.js';

/** Salted passwords by (SHA-256 of the password, salt, iterations); at most SALTED_MAX. */
const salted = new Map<string, Buffer>();
const SALTED_MAX = 256;

/**
 * Hi(password, salt, i) (RFC 5802 §2.2) for the upstream logins of this process, computed once
 * per (password, salt, iteration count): a server keeps a role's salt until its password
 * changes, and 4096 rounds of PBKDF2 are most of a login's CPU (issue 18: a login ≤ 6 ms). The
 * salted password is password-equivalent for that server, as the password the process already
 * holds is; the key holds a hash of the password, not the password. Output: 32 bytes.
 */
function cachedSaltedPassword(password: Buffer, salt: Buffer, iterations: number): Buffer {
  const key = `${sha256(password).toString('base64')}\u0000${salt.toString('base64')}\u0000${iterations}`;
  const hit = salted.get(key);
  if (hit) return hit;
  const out = saltedPassword(password, salt, iterations);
  if (salted.size >= SALTED_MAX) salted.clear();
  salted.set(key, out);
  return out;
}

/** Options of {@link ScramClientExchange}. */
export interface ScramClientOptions {
  /** Client nonce (printable, no ','); for tests only. Default: 18 random bytes, base64. */
  readonly nonce?: string;
  /**
   * The `n=` user name sent in client-first-message; default `*`. PostgreSQL ignores it and uses
   * the startup packet's user (libpq sends it empty). Characters ',' and '=' are escaped as
   * `=2C` / `=3D` (RFC 5802 §5.1).
   */
  readonly user?: string;
}

/**
 * The client side of one SCRAM-SHA-256 exchange, for the proxy's login to the upstream server:
 * {@link clientFirst} → SASLInitialResponse (mechanism SCRAM-SHA-256);
 * AuthenticationSASLContinue data → {@link clientFinal} → SASLResponse;
 * AuthenticationSASLFinal data → {@link verifyServerFinal} (mutual authentication).
 * Never asks for channel binding (flag `n`). Sources: RFC 5802 §3, §5, §7; RFC 7677;
 * PostgreSQL 15 src/interfaces/libpq/fe-auth-scram.c.
 */
export class ScramClientExchange {
  private readonly password: Buffer;
  private readonly nonce: string;
  private readonly user: string;
  private state: 'init' | 'first-sent' | 'final-sent' | 'done' = 'init';
  private clientFirstBare = '';
  private expectedServerSignature: Buffer | null = null;

  /**
   * @param password the upstream login's password (string, or raw bytes), SASLprep'd as libpq does.
   * @param opts see {@link ScramClientOptions}.
   * Throws TypeError for an unprintable nonce or a password string with an unpaired surrogate.
   */
  constructor(password: string | Buffer, opts: ScramClientOptions = {}) {
    this.password = saslPrep(password);
    const nonce = opts.nonce ?? crypto.randomBytes(RAW_NONCE_LEN).toString('base64');
    if (!PRINTABLE.test(nonce)) throw new TypeError('client nonce must be printable ASCII without ","');
    this.nonce = nonce;
    this.user = (opts.user ?? '*').replaceAll('=', '=3D').replaceAll(',', '=2C');
  }

  /**
   * Returns the client-first-message `n,,n=<user>,r=<nonce>` (RFC 5802 §5.1), the data of
   * SASLInitialResponse. Throws ScramError 08P01 when called twice.
   */
  clientFirst(): Buffer {
    if (this.state !== 'init') throw new ScramError('SCRAM client-first-message already sent');
    this.state = 'first-sent';
    this.clientFirstBare = `n=${this.user},r=${this.nonce}`;
    return Buffer.from(`n,,${this.clientFirstBare}`, 'utf8');
  }

  /**
   * Reads the server-first-message (AuthenticationSASLContinue data) and returns the
   * client-final-message `c=biws,r=<nonce>,p=<ClientProof b64>` (RFC 5802 §3, §5.1), the data of
   * SASLResponse. Runs PBKDF2 synchronously with the server's iteration count.
   * Throws ScramError 08P01 when the message is malformed, the nonce does not extend ours, the
   * salt is not base64, the iteration count is not a positive 32-bit integer, a mandatory
   * extension (`m=`) is present, or the call is out of order.
   */
  clientFinal(serverFirst: Buffer): Buffer {
    if (this.state !== 'first-sent') throw new ScramError('unexpected SCRAM server-first-message');
    this.state = 'done';
    const msg = serverFirst.toString('latin1');
    if (serverFirst.includes(0)) throw malformedServer('server-first-message contains a NUL byte');
    const attrs = msg.split(',');
    if (attrs[0]?.startsWith('m=')) throw malformedServer('server requires an unsupported SCRAM extension');
    const r = attrs[0];
    const s = attrs[1];
    const i = attrs[2];
    if (r === undefined || !r.startsWith('r=')) throw malformedServer('expected attribute "r"');
    if (s === undefined || !s.startsWith('s=')) throw malformedServer('expected attribute "s"');
    if (i === undefined || !i.startsWith('i=')) throw malformedServer('expected attribute "i"');
    for (const ext of attrs.slice(3)) {
      if (!/^[A-Za-z]=/.test(ext)) throw malformedServer('malformed attribute');
    }
    const combinedNonce = r.slice(2);
    if (
      !combinedNonce.startsWith(this.nonce) ||
      combinedNonce.length === this.nonce.length ||
      !PRINTABLE.test(combinedNonce)
    ) {
      throw malformedServer('nonce mismatch');
    }
    const salt = decodeBase64(s.slice(2));
    if (!salt || salt.length === 0) throw malformedServer('malformed salt');
    const iterText = i.slice(2);
    const iterations = Number(iterText);
    if (!/^[1-9][0-9]*$/.test(iterText) || iterations > 0x7fffffff) {
      throw malformedServer('malformed iteration count');
    }

    const salted = cachedSaltedPassword(this.password, salt, iterations);
    const clientKey = hmac(salted, 'Client Key');
    const storedKey = sha256(clientKey);
    const withoutProof = `c=biws,r=${combinedNonce}`;
    const authMessage = Buffer.concat([
      Buffer.from(this.clientFirstBare, 'utf8'),
      Buffer.from(',', 'latin1'),
      serverFirst,
      Buffer.from(`,${withoutProof}`, 'latin1'),
    ]);
    const proof = xor(clientKey, hmac(storedKey, authMessage));
    this.expectedServerSignature = hmac(hmac(salted, 'Server Key'), authMessage);
    this.state = 'final-sent';
    return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'latin1');
  }

  /**
   * Checks the server-final-message (AuthenticationSASLFinal data): `v=<ServerSignature b64>`
   * must equal HMAC(ServerKey, AuthMessage), compared in constant time (RFC 5802 §3, §5.1).
   * Returns nothing on success. Throws ScramError 28000 when the signature is wrong (the server
   * does not know the password) or the server sent `e=<error>`; 08P01 when the message is
   * malformed or the call is out of order.
   */
  verifyServerFinal(serverFinal: Buffer): void {
    if (this.state !== 'final-sent' || !this.expectedServerSignature) {
      throw new ScramError('unexpected SCRAM server-final-message');
    }
    this.state = 'done';
    const first = serverFinal.toString('latin1').split(',')[0] ?? '';
    if (first.startsWith('e=')) {
      throw new ScramError('SCRAM authentication failed on the server', first.slice(2), '28000');
    }
    if (!first.startsWith('v=')) throw malformedServer('expected attribute "v"');
    const signature = decodeBase64(first.slice(2));
    if (!signature || signature.length !== KEY_LEN) throw malformedServer('malformed server signature');
    if (!crypto.timingSafeEqual(signature, this.expectedServerSignature)) {
      throw new ScramError('incorrect server signature', undefined, '28000');
    }
  }
}

function malformedServer(detail: string): ScramError {
  return new ScramError('malformed SCRAM message from the server', detail);
}

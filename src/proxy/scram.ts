// SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL speaks it: stored verifiers, the server side for clients, the client side for the upstream.
import crypto from 'node:crypto';

/** Mechanism name advertised in AuthenticationSASL and stored as the verifier prefix (RFC 7677 §2). */
export const SCRAM_SHA_256 = 'SCRAM-SHA-256';

/** PostgreSQL's default iteration count (`scram_iterations`, src/include/common/scram-common.h). */
export const SCRAM_DEFAULT_ITERATIONS = 4096;

/** Salt length PostgreSQL uses for new verifiers, in bytes (SCRAM_DEFAULT_SALT_LEN). */
export const SCRAM_DEFAULT_SALT_LEN = 16;

/** Random bytes behind each side's nonce, base64-encoded on the wire (libpq's SCRAM_RAW_NONCE_LEN). */
const RAW_NONCE_LEN = 18;

/** SHA-256 output length, the length of every key and signature, in bytes. */
const KEY_LEN = 32;

/**
 * A SCRAM failure that ends the authentication exchange, with the SQLSTATE the proxy puts in the
 * FATAL ErrorResponse it sends before closing:
 * - `08P01` protocol_violation: a malformed SCRAM message, a channel-binding or nonce mismatch,
 *   a message out of order, or a malformed/unsupported reply from the upstream server;
 * - `0A000` feature_not_supported: an authorization identity (`a=`) or a mandatory extension
 *   (`m=`), which PostgreSQL refuses the same way;
 * - `28000` invalid_authorization_specification: the upstream server's signature is wrong
 *   (it does not know the password: a spoofed server) or it answered with `e=`.
 * `detail` carries PostgreSQL's errdetail text where it has one.
 * Source: PostgreSQL 15 src/backend/libpq/auth-scram.c, Appendix A "PostgreSQL Error Codes".
 */
export class ScramError extends Error {
  /** Five-character SQLSTATE, see the class docstring. */
  readonly sqlstate: string;
  /** Optional DETAIL for the ErrorResponse. */
  readonly detail: string | undefined;

  /**
   * @param message MESSAGE text in PostgreSQL's style (`malformed SCRAM message`).
   * @param detail DETAIL text or undefined.
   * @param sqlstate five-character SQLSTATE, `08P01` by default.
   */
  constructor(message: string, detail?: string, sqlstate = '08P01') {
    super(detail ? `${message}: ${detail}` : message);
    this.name = 'ScramError';
    this.sqlstate = sqlstate;
    this.detail = detail;
  }
}

function malformed(detail: string): ScramError {
  return new ScramError('malformed SCRAM message', detail);
}

// ---------------------------------------------------------------------------------------------
// SASLprep (RFC 4013 over RFC 3454), mirroring PostgreSQL's pg_saslprep (src/common/saslprep.c).
// ---------------------------------------------------------------------------------------------

type Ranges = readonly (readonly [number, number])[];

function inRanges(cp: number, ranges: Ranges): boolean {
  for (const [lo, hi] of ranges) {
    if (cp < lo) return false;
    if (cp <= hi) return true;
  }
  return false;
}

/** RFC 3454 table C.1.2, non-ASCII space characters: mapped to U+0020 (RFC 4013 §2.1). */
const NON_ASCII_SPACE: Ranges = [
  [0x00a0, 0x00a0],
  [0x1680, 0x1680],
  [0x2000, 0x200b],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
];

/** RFC 3454 table B.1, "commonly mapped to nothing": removed (RFC 4013 §2.1). */
const MAPPED_TO_NOTHING: Ranges = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x1806, 0x1806],
  [0x180b, 0x180d],
  [0x200b, 0x200d],
  [0x2060, 0x2060],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
];

/**
 * RFC 4013 §2.3 prohibited output: the union of RFC 3454 tables C.1.2, C.2.1, C.2.2, C.3, C.4,
 * C.5, C.6, C.7, C.8 and C.9, adjacent ranges merged.
 */
const PROHIBITED: Ranges = [
  [0x0000, 0x001f], // C.2.1
  [0x007f, 0x00a0], // C.2.1, C.2.2, C.1.2
  [0x0340, 0x0341], // C.8
  [0x06dd, 0x06dd], // C.2.2
  [0x070f, 0x070f], // C.2.2
  [0x1680, 0x1680], // C.1.2
  [0x180e, 0x180e], // C.2.2
  [0x2000, 0x200f], // C.1.2, C.2.2, C.8
  [0x2028, 0x202f], // C.1.2, C.2.2, C.8
  [0x205f, 0x2063], // C.1.2, C.2.2
  [0x206a, 0x206f], // C.2.2, C.8
  [0x2ff0, 0x2ffb], // C.7
  [0x3000, 0x3000], // C.1.2
  [0xd800, 0xf8ff], // C.5, C.3
  [0xfdd0, 0xfdef], // C.4
  [0xfeff, 0xfeff], // C.2.2
  [0xfff9, 0xffff], // C.2.2, C.6, C.4
  [0x1d173, 0x1d17a], // C.2.2
  [0xe0001, 0xe0001], // C.9
  [0xe0020, 0xe007f], // C.9
  [0xf0000, 0x10ffff], // C.3, C.4
];

/** RFC 3454 table D.1: characters of bidirectional category R or AL (Unicode 3.2). */
const RAND_AL_CAT: Ranges = [
  [0x05be, 0x05be],
  [0x05c0, 0x05c0],
  [0x05c3, 0x05c3],
  [0x05d0, 0x05ea],
  [0x05f0, 0x05f4],
  [0x061b, 0x061b],
  [0x061f, 0x061f],
  [0x0621, 0x063a],
  [0x0640, 0x064a],
  [0x066d, 0x066f],
  [0x0671, 0x06d5],
  [0x06dd, 0x06dd],
  [0x06e5, 0x06e6],
  [0x06fa, 0x06fe],
  [0x0700, 0x070d],
  [0x0710, 0x0710],
  [0x0712, 0x072c],
  [0x0780, 0x07a5],
  [0x07b1, 0x07b1],
  [0x200f, 0x200f],
  [0xfb1d, 0xfb1d],
  [0xfb1f, 0xfb28],
  [0xfb2a, 0xfb36],
  [0xfb38, 0xfb3c],
  [0xfb3e, 0xfb3e],
  [0xfb40, 0xfb41],
  [0xfb43, 0xfb44],
  [0xfb46, 0xfbb1],
  [0xfbd3, 0xfd3d],
  [0xfd50, 0xfd8f],
  [0xfd92, 0xfdc7],
  [0xfdf0, 0xfdfc],
  [0xfe70, 0xfe74],
  [0xfe76, 0xfefc],
];

function isNonCharacter(cp: number): boolean {
  // RFC 3454 C.4: U+nFFFE and U+nFFFF in every plane (plane 0 is covered by PROHIBITED).
  return (cp & 0xfffe) === 0xfffe;
}

/** Unassigned code points (RFC 3454 A.1 is Unicode 3.2's list; see saslPrep for the deviation). */
const UNASSIGNED = /^\p{Cn}$/u;
/** Approximates RFC 3454 D.2 (bidirectional category L): letters and spacing marks. */
const LETTER_LIKE = /^[\p{L}\p{Mc}]$/u;

function isLCat(ch: string, cp: number): boolean {
  return !inRanges(cp, RAND_AL_CAT) && LETTER_LIKE.test(ch);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Prepares a password the way PostgreSQL (server and libpq) does before SCRAM hashes it, and
 * returns the bytes to feed PBKDF2.
 *
 * Input: the password as a string or as raw bytes. Output: a new Buffer.
 * Rules, in PostgreSQL's order (pg_saslprep, src/common/saslprep.c; RFC 4013 §2, RFC 3454 §2):
 * 1. pure ASCII (every byte < 0x80, control characters included) → the bytes unchanged;
 * 2. bytes that are not valid UTF-8 → the bytes unchanged (PostgreSQL's SASLPREP_INVALID_UTF8);
 * 3. map: C.1.2 non-ASCII spaces → U+0020, B.1 characters → removed;
 * 4. NFKC (String.prototype.normalize, the runtime's Unicode version);
 * 5. prohibit: C.1.2–C.9 characters, unassigned code points, and strings that break the
 *    bidirectional rules of RFC 3454 §6; like PostgreSQL this looks at the mapped input of
 *    step 3 (not at the NFKC output), and an empty mapped string is prohibited too;
 * 6. a prohibited string → the original bytes unchanged: PostgreSQL never rejects a password
 *    for SASLprep, it falls back to the raw bytes (SASLPREP_PROHIBITED), so we do the same.
 * Deviations from PostgreSQL, both in rare non-ASCII passwords: "unassigned" means unassigned in
 * the runtime's Unicode version (`\p{Cn}`), whereas PostgreSQL uses Unicode 3.2's table A.1 (a
 * character assigned after 3.2 makes PostgreSQL fall back to the raw bytes; here it does only if
 * NFKC leaves the string unchanged anyway); and bidirectional category L (table D.2) is
 * approximated by "letter or spacing mark that is not R/AL" (table D.1 is exact).
 * Throws TypeError for a string with an unpaired surrogate (it has no UTF-8 encoding).
 */
export function saslPrep(password: string | Buffer): Buffer {
  let text: string;
  let raw: Buffer;
  if (typeof password === 'string') {
    if (LONE_SURROGATE.test(password)) throw new TypeError('password contains an unpaired UTF-16 surrogate');
    text = password;
    raw = Buffer.from(password, 'utf8');
  } else {
    raw = Buffer.from(password);
    try {
      text = utf8Strict.decode(raw);
    } catch {
      return raw;
    }
  }
  if (raw.every((b) => b < 0x80)) return raw;

  let mapped = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (inRanges(cp, NON_ASCII_SPACE)) mapped += ' ';
    else if (!inRanges(cp, MAPPED_TO_NOTHING)) mapped += ch;
  }
  if (mapped === '') return raw;

  const chars = Array.from(mapped);
  let hasRandAL = false;
  let hasL = false;
  for (const ch of chars) {
    const cp = ch.codePointAt(0)!;
    if (inRanges(cp, PROHIBITED) || isNonCharacter(cp) || UNASSIGNED.test(ch)) return raw;
    if (inRanges(cp, RAND_AL_CAT)) hasRandAL = true;
    else if (isLCat(ch, cp)) hasL = true;
  }
  if (hasRandAL) {
    // RFC 3454 §6: no L character at all, and R/AL characters first and last.
    const first = chars[0]!.codePointAt(0)!;
    const last = chars[chars.length - 1]!.codePointAt(0)!;
    if (hasL || !inRanges(first, RAND_AL_CAT) || !inRanges(last, RAND_AL_CAT)) return raw;
  }
  return Buffer.from(mapped.normalize('NFKC'), 'utf8');
}

// ---------------------------------------------------------------------------------------------
// Primitives (RFC 5802 §2.2 and §3, with H = SHA-256 per RFC 7677).
// ---------------------------------------------------------------------------------------------

function hmac(key: Buffer, data: Buffer | string): Buffer {
  return crypto.createHmac('sha256', key).update(data).digest();
}

function sha256(data: Buffer): Buffer {
  return crypto.createHash('sha256').update(data).digest();
}

/** Hi(password, salt, i) of RFC 5802 §2.2 is PBKDF2-HMAC-SHA-256 with one output block. */
function saltedPassword(prepared: Buffer, salt: Buffer, iterations: number): Buffer {
  return crypto.pbkdf2Sync(prepared, salt, iterations, KEY_LEN, 'sha256');
}

function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 (RFC 4648 §4, padded): Node's own decoder silently skips invalid characters. */
function decodeBase64(s: string): Buffer | null {
  return BASE64.test(s) ? Buffer.from(s, 'base64') : null;
}

/** RFC 5802 §7 `printable`: %x21-2B / %x2D-7E, i.e. visible ASCII but ','. */
const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/;

// ---------------------------------------------------------------------------------------------
// Stored verifiers (PostgreSQL's pg_authid.rolpassword format).
// ---------------------------------------------------------------------------------------------

/**
 * A parsed SCRAM-SHA-256 verifier: what the server stores instead of the password
 * (RFC 5802 §3: StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key")).
 * `iterations` is the PBKDF2 count; keys are 32 bytes.
 */
export interface ScramVerifier {
  readonly iterations: number;
  readonly salt: Buffer;
  readonly storedKey: Buffer;
  readonly serverKey: Buffer;
}

/** Options of {@link createScramVerifier}. */
export interface CreateVerifierOptions {
  /** PBKDF2 iteration count, a positive integer; PostgreSQL's default 4096. */
  readonly iterations?: number;
  /** Salt bytes (non-empty); 16 random bytes by default, as PostgreSQL does. */
  readonly salt?: Buffer;
}

/**
 * Builds a verifier in PostgreSQL's stored format
 * `SCRAM-SHA-256$<iterations>:<salt b64>$<StoredKey b64>:<ServerKey b64>`
 * (as `CREATE ROLE … PASSWORD` stores it in pg_authid.rolpassword with
 * password_encryption = scram-sha-256; src/common/scram-common.c scram_build_secret).
 * The password goes through {@link saslPrep} first. Runs PBKDF2 synchronously (~a few ms at
 * 4096 iterations). Throws RangeError for a non-positive or non-integer iteration count or an
 * empty salt, TypeError for a string with an unpaired surrogate.
 * Source: RFC 5802 §3, RFC 7677 §3.
 */
export function createScramVerifier(password: string | Buffer, opts: CreateVerifierOptions = {}): string {
  const iterations = opts.iterations ?? SCRAM_DEFAULT_ITERATIONS;
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > 0x7fffffff) {
    throw new RangeError(`SCRAM iteration count must be a positive 32-bit integer, got ${iterations}`);
  }
  const salt = opts.salt ?? crypto.randomBytes(SCRAM_DEFAULT_SALT_LEN);
  if (salt.length === 0) throw new RangeError('SCRAM salt must not be empty');
  const salted = saltedPassword(saslPrep(password), salt, iterations);
  const storedKey = sha256(hmac(salted, 'Client Key'));
  const serverKey = hmac(salted, 'Server Key');
  return `${SCRAM_SHA_256}$${iterations}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}

/**
 * Parses a stored verifier (the format of {@link createScramVerifier}). Returns null for anything
 * else — an MD5 hash (`md5…`), a plain-text password, bad base64, keys that are not 32 bytes, a
 * non-positive iteration count — so the caller runs a mock exchange, as PostgreSQL does for a
 * role without a usable SCRAM secret. Never throws.
 * Source: PostgreSQL 15 src/backend/libpq/auth-scram.c parse_scram_secret.
 */
export function parseScramVerifier(s: string): ScramVerifier | null {
  const m = /^SCRAM-SHA-256\$([0-9]+):([^$:]+)\$([^$:]+):([^$:]+)$/.exec(s);
  if (!m) return null;
  const iterations = Number(m[1]);
  if (!Number.isSafeInteger(iterations) || iterations < 1 || iterations > 0x7fffffff) return null;
  const salt = decodeBase64(m[2]!);
  const storedKey = decodeBase64(m[3]!);
  const serverKey = decodeBase64(m[4]!);
  if (!salt || salt.length === 0 || storedKey?.length !== KEY_LEN || serverKey?.length !== KEY_LEN)
    return null;
  return { iterations, salt, storedKey, serverKey };
}

// ---------------------------------------------------------------------------------------------
// Server side: authenticating a client of the proxy.
// ---------------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------------
// Client side: the proxy logging into the upstream server.
// ---------------------------------------------------------------------------------------------

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

    const salted = saltedPassword(this.password, salt, iterations);
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

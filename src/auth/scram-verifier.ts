// SCRAM-SHA-256 stored verifiers in PostgreSQL's pg_authid.rolpassword format: made from a password, parsed.
import crypto from 'node:crypto';
import { saslPrep } from './saslprep.js';
import {
  decodeBase64,
  hmac,
  KEY_LEN,
  SCRAM_DEFAULT_ITERATIONS,
  SCRAM_DEFAULT_SALT_LEN,
  SCRAM_SHA_256,
  saltedPassword,
  sha256,
} from './scram-primitives.js';

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

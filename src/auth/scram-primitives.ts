// SCRAM-SHA-256's constants and primitives (RFC 5802 §2.2 and §3, with H = SHA-256 per RFC 7677).
import crypto from 'node:crypto';

/** Mechanism name advertised in AuthenticationSASL and stored as the verifier prefix (RFC 7677 §2). */
export const SCRAM_SHA_256 = 'SCRAM-SHA-256';

/** PostgreSQL's default iteration count (`scram_iterations`, src/include/common/scram-common.h). */
export const SCRAM_DEFAULT_ITERATIONS = 4096;

/** Salt length PostgreSQL uses for new verifiers, in bytes (SCRAM_DEFAULT_SALT_LEN). */
export const SCRAM_DEFAULT_SALT_LEN = 16;

/** Random bytes behind each side's nonce, base64-encoded on the wire (libpq's SCRAM_RAW_NONCE_LEN). */
export const RAW_NONCE_LEN = 18;

/** SHA-256 output length, the length of every key and signature, in bytes. */
export const KEY_LEN = 32;

/** HMAC-SHA-256 of `data` (a string is hashed as UTF-8) under `key`: 32 bytes (RFC 5802 §2.2 HMAC). */
export function hmac(key: Buffer, data: Buffer | string): Buffer {
  return crypto.createHmac('sha256', key).update(data).digest();
}

/** SHA-256 of `data`: 32 bytes (RFC 5802 §2.2 H, RFC 7677). */
export function sha256(data: Buffer): Buffer {
  return crypto.createHash('sha256').update(data).digest();
}

/** Hi(password, salt, i) of RFC 5802 §2.2 is PBKDF2-HMAC-SHA-256 with one output block. */
export function saltedPassword(prepared: Buffer, salt: Buffer, iterations: number): Buffer {
  return crypto.pbkdf2Sync(prepared, salt, iterations, KEY_LEN, 'sha256');
}

/** Byte-wise XOR of two buffers of the same length (RFC 5802 §2.2 XOR); a new buffer of `a`'s length. */
export function xor(a: Buffer, b: Buffer): Buffer {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! ^ b[i]!;
  return out;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Strict base64 (RFC 4648 §4, padded): Node's own decoder silently skips invalid characters. */
export function decodeBase64(s: string): Buffer | null {
  return BASE64.test(s) ? Buffer.from(s, 'base64') : null;
}

/** RFC 5802 §7 `printable`: %x21-2B / %x2D-7E, i.e. visible ASCII but ','. */
export const PRINTABLE = /^[\x21-\x2b\x2d-\x7e]+$/;

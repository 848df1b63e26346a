// API key life cycle: new ids and tokens, expiry specs, create, rotate (24-hour overlap), revoke, status.
import crypto from 'node:crypto';
import { createScramVerifier, parseScramVerifier } from '../auth/scram-verifier.js';
import { type ApiKey, MAX_KEY_LIFETIME_MS } from './policy-schema.js';

/** Tokens start with this, so a leaked one is recognisable (secret scanners, logs). */
export const TOKEN_PREFIX = 'pgwt_';
/** Key ids (the user name on the wire) start with this (config-schema.ts: `pgw_<8-32 letters or digits>`). */
export const KEY_ID_PREFIX = 'pgw_';
/** How long a rotated key's previous token stays valid (issue 4: "keeps the old token valid for 24 hours"). */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A new key id: `pgw_` and 16 random letters or digits (≈95 bits). */
export function newKeyId(): string {
  let out = '';
  while (out.length < 16) {
    for (const b of crypto.randomBytes(32)) {
      // Rejection sampling keeps every character equally likely (62 does not divide 256).
      if (b < 248 && out.length < 16) out += ALNUM[b % 62];
    }
  }
  return KEY_ID_PREFIX + out;
}

/** A new token: `pgwt_` and 32 random bytes in base64url (43 characters). */
export function newToken(): string {
  return TOKEN_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/**
 * Reads an expiry as the CLI takes it: `never`, `<n>d` (days), `<n>h` (hours), or an ISO 8601 date
 * or date-time. Output: the expiry as an ISO string (null for never), or a message when it is not in
 * the future or is more than one year from `now` (issue 4: "an expiry (never, or at most one year)").
 */
export function parseExpiry(
  spec: string,
  now: number,
): { ok: true; expiresAt: string | null } | { ok: false; message: string } {
  if (spec === 'never') return { ok: true, expiresAt: null };
  let at: number;
  const rel = /^(\d+)([dh])$/.exec(spec);
  if (rel) at = now + Number(rel[1]) * (rel[2] === 'd' ? 86_400_000 : 3_600_000);
  else if (/^\d{4}-\d{2}-\d{2}/.test(spec)) at = Date.parse(spec);
  else return { ok: false, message: `expiry "${spec}" must be never, <n>d, <n>h or an ISO date` };
  if (!Number.isFinite(at)) return { ok: false, message: `expiry "${spec}" is not a valid date` };
  if (at <= now) return { ok: false, message: `expiry "${spec}" is not in the future` };
  if (at - now > MAX_KEY_LIFETIME_MS)
    return { ok: false, message: `expiry "${spec}" is more than one year away; use never or at most 365d` };
  return { ok: true, expiresAt: new Date(at).toISOString() };
}

/** The state of a key at `now` (ms): revoked, expired, or active. */
export function keyStatus(k: ApiKey, now: number): 'active' | 'expired' | 'revoked' {
  if (k.revoked) return 'revoked';
  if (k.expires_at !== null && Date.parse(k.expires_at) <= now) return 'expired';
  return 'active';
}

/** Options of {@link createKey}. */
export interface CreateKeyOptions {
  readonly roles: readonly string[];
  /** ISO date-time, or null for never (see {@link parseExpiry}). */
  readonly expiresAt: string | null;
  readonly description?: string;
  /** ms since the epoch. */
  readonly now: number;
  /** PBKDF2 iterations of the verifier; 4096 by default (the token has 256 bits of entropy). */
  readonly iterations?: number;
}

/**
 * Adds a new key to `keys`. Output: the new list, the key, and its token — shown once, never stored
 * (only its SCRAM verifier is). Source: issue 4, "its token stored as a SCRAM verifier so it can log
 * in over SCRAM", "prints a new token once". Throws nothing but createScramVerifier's RangeError.
 */
export function createKey(
  keys: readonly ApiKey[],
  opts: CreateKeyOptions,
): { keys: ApiKey[]; key: ApiKey; token: string } {
  let id = newKeyId();
  while (keys.some((k) => k.id === id)) id = newKeyId();
  const token = newToken();
  const key: ApiKey = {
    id,
    scram: createScramVerifier(token, opts.iterations !== undefined ? { iterations: opts.iterations } : {}),
    roles: [...opts.roles],
    ...(opts.description !== undefined ? { description: opts.description } : {}),
    created_at: new Date(opts.now).toISOString(),
    expires_at: opts.expiresAt,
    revoked: false,
  };
  return { keys: [...keys, key], key, token };
}

/**
 * Gives key `id` a new token. The current token stays valid for 24 hours as `previous_scram`
 * (`previous_expires_at` = now + 24 h); an earlier previous token is dropped. The new verifier uses
 * the SAME salt and iteration count as the current one, so one SCRAM exchange (one salt sent to the
 * client) can check a proof against both. Source: issue 4, "rotation that keeps the old token valid
 * for 24 hours". Output: the new list and the token, or a message for an unknown, revoked or expired key.
 */
export function rotateKey(
  keys: readonly ApiKey[],
  id: string,
  now: number,
): { ok: true; keys: ApiKey[]; key: ApiKey; token: string } | { ok: false; message: string } {
  const old = keys.find((k) => k.id === id);
  if (!old) return { ok: false, message: `no API key "${id}"` };
  const status = keyStatus(old, now);
  if (status !== 'active') return { ok: false, message: `API key "${id}" is ${status}; create a new one` };
  const v = parseScramVerifier(old.scram);
  if (!v) return { ok: false, message: `API key "${id}" has an unreadable verifier` };
  const token = newToken();
  const key: ApiKey = {
    ...old,
    scram: createScramVerifier(token, { salt: v.salt, iterations: v.iterations }),
    previous_scram: old.scram,
    previous_expires_at: new Date(now + ROTATION_OVERLAP_MS).toISOString(),
  };
  return { ok: true, keys: keys.map((k) => (k.id === id ? key : k)), key, token };
}

/**
 * Revokes key `id` (kept in the file, marked `revoked: true`, its previous token dropped): the proxy
 * refuses its logins after the next reload and closes its open sessions (issue 4). Output: the new
 * list, or a message for an unknown key. Revoking a revoked key is allowed and changes nothing.
 */
export function revokeKey(
  keys: readonly ApiKey[],
  id: string,
): { ok: true; keys: ApiKey[] } | { ok: false; message: string } {
  if (!keys.some((k) => k.id === id)) return { ok: false, message: `no API key "${id}"` };
  return {
    ok: true,
    keys: keys.map((k) => {
      if (k.id !== id) return k;
      const { previous_scram: _p, previous_expires_at: _e, ...rest } = k;
      return { ...rest, revoked: true };
    }),
  };
}

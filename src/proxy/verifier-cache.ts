// Parsed SCRAM verifiers per principal, derived once from the config (demo plain passwords included).
import crypto from 'node:crypto';
import { createScramVerifier, parseScramVerifier, type ScramVerifier } from '../auth/scram-verifier.js';
import { loginVerifiers } from '../policy/login-verifiers.js';
import type { Principal } from '../policy/principals.js';

/**
 * Parses stored verifiers once, and turns a demo user's plain password into a verifier once
 * (PBKDF2 at 4096 iterations costs milliseconds: not on every login). The salt of a derived
 * verifier is HMAC(user, secret) so it stays the same for a user across logins of one process.
 */
export class VerifierCache {
  private readonly cache = new Map<string, ScramVerifier | null>();

  /**
   * @param secret bytes behind derived salts and the mock salts of unknown users; keep it stable
   * across restarts (see {@link authSecretFor}) so an unknown user's fake salt stays as stable as a
   * real user's, as PostgreSQL's mock_authentication_nonce does.
   */
  constructor(readonly secret: Buffer) {}

  /**
   * The verifiers the principal logs in with now: the current one, and alternates sharing its salt
   * (a rotated API key's previous token); null when it has none usable (a doomed exchange).
   */
  loginFor(p: Principal): { primary: ScramVerifier; alternates: readonly ScramVerifier[] } | null {
    const stored = loginVerifiers(p);
    if (stored) return stored;
    const derived = this.forPrincipal(p);
    return derived ? { primary: derived, alternates: [] } : null;
  }

  /** The verifier the principal logs in with now, or null when it has none usable (a doomed exchange). */
  forPrincipal(p: Principal): ScramVerifier | null {
    const stored = p.verifiers[0];
    const key =
      stored !== undefined ? `v\0${stored}` : `p\0${p.name}\0${p.kind === 'user' ? (p.password ?? '') : ''}`;
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit;
    let v: ScramVerifier | null = null;
    if (stored !== undefined) v = parseScramVerifier(stored);
    else if (p.kind === 'user' && p.password !== undefined) {
      const salt = crypto.createHmac('sha256', this.secret).update(p.name).digest().subarray(0, 16);
      v = parseScramVerifier(createScramVerifier(p.password, { salt }));
    }
    this.cache.set(key, v);
    return v;
  }
}

/**
 * A secret that is stable for a given config and unguessable without it: SHA-256 over every
 * stored verifier and password of the config. Source: PostgreSQL's scram_mock_salt.
 */
export function authSecretFor(config: { users: object; api_keys: object }, file: string): Buffer {
  return crypto
    .createHash('sha256')
    .update('pgwarden mock salt\0')
    .update(file)
    .update(JSON.stringify(config.users))
    .update(JSON.stringify(config.api_keys))
    .digest();
}

// Who an MCP caller is: the API key whose token it presents (only API keys authenticate to `pgwarden mcp`).
import crypto from 'node:crypto';
import { saslPrep } from '../auth/saslprep.js';
import { parseScramVerifier } from '../auth/scram-verifier.js';
import type { Config } from '../policy/config-schema.js';
import { findPrincipal } from '../policy/principals.js';
import { resolveRoles } from '../policy/resolve-roles.js';

/** An authenticated MCP caller: the key id (the user name on the wire), its token, and its roles now. */
export interface McpIdentity {
  readonly keyId: string;
  /** The token as presented; it is the password the tools log in to the proxy's listener with. */
  readonly token: string;
  /** The key's roles as resolved now (an API key holds exactly its own roles). */
  readonly roles: readonly string[];
}

/** The outcome of {@link ApiKeyAuthenticator.authenticate}: the identity, or why there is none. */
export type KeyCheck =
  | { readonly ok: true; readonly identity: McpIdentity }
  | { readonly ok: false; readonly reason: 'missing' | 'invalid' };

/** Caches beyond this many entries are cleared (they only save PBKDF2 work). */
const CACHE_LIMIT = 1024;

function sha256Hex(s: string): string {
  return crypto.createHash('sha256').update(s, 'utf8').digest('hex');
}

/**
 * True when `token` is the password behind the stored SCRAM-SHA-256 `verifier`: StoredKey =
 * H(HMAC(PBKDF2(SASLprep(token), salt, i), "Client Key")), compared in constant time.
 * Source: RFC 5802 §3 (what the proxy's own SCRAM exchange checks). False for an unreadable verifier
 * or a token SASLprep rejects. Costs one PBKDF2 (~2 ms at 4096 iterations).
 */
export function tokenMatchesVerifier(token: string, verifier: string): boolean {
  const v = parseScramVerifier(verifier);
  if (!v) return false;
  let prepared: Buffer;
  try {
    prepared = saslPrep(token);
  } catch {
    return false;
  }
  const salted = crypto.pbkdf2Sync(prepared, v.salt, v.iterations, 32, 'sha256');
  const clientKey = crypto.createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = crypto.createHash('sha256').update(clientKey).digest();
  return crypto.timingSafeEqual(storedKey, v.storedKey);
}

/**
 * Finds the API key a token belongs to. Design (documented in README "MCP server"): the caller
 * presents the token alone — what `pgwarden keys create` prints, in `PGWARDEN_API_KEY` (stdio) or
 * `Authorization: Bearer <token>` (HTTP) — and the key is found by checking the token against every
 * active key's verifiers (current, and a rotated key's previous one for its 24 hours). Users never
 * authenticate here (seed 004: an agent gets what its key's roles name). Every check re-reads the
 * config in force (a reload that revokes a key, or a key's expiry, takes effect on the next request);
 * only the PBKDF2 work is cached, by SHA-256 of the token, per config value: a hit still requires the
 * matched verifier to be one the key holds now.
 */
export class ApiKeyAuthenticator {
  private cacheFor: Config | undefined;
  private readonly matched = new Map<string, { keyId: string; verifier: string }>();
  private readonly unmatched = new Set<string>();

  /** @param config the config in force now (called on every check). */
  constructor(private readonly config: () => Config) {}

  /**
   * Authenticates `token` at `now` (ms). Output: the identity with its roles, or `missing` (no token,
   * empty) or `invalid` (no active key has this token: unknown, revoked, expired, or a key whose
   * roles no longer exist). Never throws.
   */
  authenticate(token: string | undefined, now: number = Date.now()): KeyCheck {
    if (token === undefined || token.trim() === '') return { ok: false, reason: 'missing' };
    const config = this.config();
    if (this.cacheFor !== config) {
      this.cacheFor = config;
      this.matched.clear();
      this.unmatched.clear();
    }
    const digest = sha256Hex(token);
    let hit = this.matched.get(digest);
    if (!hit && !this.unmatched.has(digest)) {
      hit = this.search(config, token, now);
      if (this.matched.size + this.unmatched.size >= CACHE_LIMIT) {
        this.matched.clear();
        this.unmatched.clear();
      }
      if (hit) this.matched.set(digest, hit);
      else this.unmatched.add(digest);
    }
    if (!hit) return { ok: false, reason: 'invalid' };
    const principal = findPrincipal(config, hit.keyId, now);
    if (principal?.kind !== 'api-key' || !principal.verifiers.includes(hit.verifier)) {
      this.matched.delete(digest);
      return { ok: false, reason: 'invalid' };
    }
    const roles = resolveRoles(config, principal, {});
    if (!roles.ok) return { ok: false, reason: 'invalid' };
    return { ok: true, identity: { keyId: hit.keyId, token, roles: roles.roles } };
  }

  private search(
    config: Config,
    token: string,
    now: number,
  ): { keyId: string; verifier: string } | undefined {
    for (const key of config.api_keys) {
      const principal = findPrincipal(config, key.id, now);
      if (principal?.kind !== 'api-key') continue;
      for (const verifier of principal.verifiers) {
        if (tokenMatchesVerifier(token, verifier)) return { keyId: key.id, verifier };
      }
    }
    return undefined;
  }
}

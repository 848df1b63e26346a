// Who calls the admin API: a workspace user's cookie session (password login, delay and lock-out) or an API key's Bearer token.
import crypto from 'node:crypto';
import { createScramVerifier } from '../auth/scram-verifier.js';
import { ApiKeyAuthenticator, tokenMatchesVerifier } from '../mcp/api-key-auth.js';
import type { Config } from '../policy/config-schema.js';
import type { Editor } from '../policy/grant-limits.js';
import { findPrincipal, type Principal } from '../policy/principals.js';
import { isWorkspaceAdmin, resolveRoles } from '../policy/resolve-roles.js';

/** The session cookie's name. */
export const SESSION_COOKIE = 'pgwarden_session';
/** A session ends this long after its last use (ms). */
export const SESSION_IDLE_MS = 8 * 3600 * 1000;
/** A session ends this long after its login, however often it is used (ms). */
export const SESSION_MAX_MS = 24 * 3600 * 1000;
/** Sessions one user may hold at once; a new login beyond it ends that user's oldest. */
export const SESSIONS_PER_USER = 32;
/** Failed logins of one user name from one address within LOCK_WINDOW_MS that lock it there. */
export const LOCK_AFTER_FAILURES = 5;
/** The window over which failures count, and how long a lock lasts (ms). */
export const LOCK_WINDOW_MS = 15 * 60 * 1000;

/** An authenticated caller: who, how, and the roles it holds now (re-resolved on every request). */
export interface AdminCaller extends Editor {
  readonly via: 'session' | 'api-key';
  /** The session id (cookie callers only): what CSRF tokens are bound to. */
  readonly sessionId?: string;
}

/** The outcome of a password login. */
export type LoginResult =
  | { readonly ok: true; readonly sessionId: string }
  | {
      readonly ok: false;
      readonly status: 401 | 429;
      readonly message: string;
      readonly retryAfterS?: number;
    };

interface Session {
  readonly user: string;
  /** The user's credential when it logged in ({@link credentialOf}): a new password ends the session. */
  readonly credential: string;
  readonly loggedIn: number;
  lastUsed: number;
}

/**
 * What an unknown name's password is checked against, so that a login for a name that does not
 * exist costs the same PBKDF2 work as one for a name that does (no user enumeration by timing).
 */
const DUMMY_VERIFIER = createScramVerifier(crypto.randomBytes(16).toString('hex'));

/** A digest of what a user logs in with (its verifier, or a demo user's password). */
function credentialOf(p: { verifiers: readonly string[]; password?: string }): string {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([p.verifiers, p.password ?? null]))
    .digest('base64url');
}

/** The roles `name` holds as a connection naming no role would (seed 000); none when it holds none. */
function rolesOf(config: Config, name: string, kind: 'user' | 'api-key', now: number): string[] {
  const p = findPrincipal(config, name, now);
  if (!p || p.kind !== kind) return [];
  const r = resolveRoles(config, p, {});
  return r.ok ? r.roles : [];
}

/**
 * Admin API authentication (issue 19). Users log in with their password, checked against their stored
 * SCRAM-SHA-256 verifier (RFC 5802 §3 StoredKey; a demo user's plain password compared in constant
 * time; an unknown name is checked against a dummy verifier, so it costs the same); a failed login
 * answers after `delayMs`, and LOCK_AFTER_FAILURES failures of one name from one client address
 * within 15 minutes lock that name from that address for 15 minutes (429, even with the right
 * password; another address is not locked out, so nobody can lock the dba out by naming it).
 * Sessions live in this instance's memory, keyed by a random 256-bit id sent as an HttpOnly
 * SameSite=Strict cookie; one ends SESSION_IDLE_MS after its last use or SESSION_MAX_MS after its
 * login, and a user holds at most SESSIONS_PER_USER (a new login ends the oldest). API keys present
 * `Authorization: Bearer <token>` (mcp/api-key-auth.ts finds the key). Every request re-reads the
 * config in force: a disabled user or revoked key is refused at once, and so is every session of a
 * user whose password changed since it logged in (a session taken before a reset does not outlive it).
 */
export class AdminAuth {
  private readonly sessions = new Map<string, Session>();
  private readonly failures = new Map<string, number[]>();
  private readonly keys: ApiKeyAuthenticator;

  constructor(
    private readonly config: () => Config,
    private readonly delayMs: () => number,
  ) {
    this.keys = new ApiKeyAuthenticator(config);
  }

  /**
   * Checks `user`'s password, tried from client `address` (the failure book's key with the name);
   * on success opens a session. Never says whether the user exists.
   */
  async login(user: string, password: string, address = '', now = Date.now()): Promise<LoginResult> {
    const book = `${address}\u0000${user}`;
    const recent = (this.failures.get(book) ?? []).filter((t) => now - t < LOCK_WINDOW_MS);
    if (recent.length >= LOCK_AFTER_FAILURES) {
      const retryAfterS = Math.ceil(
        (LOCK_WINDOW_MS - (now - (recent[recent.length - LOCK_AFTER_FAILURES] ?? now))) / 1000,
      );
      return {
        ok: false,
        status: 429,
        message: 'too many failed logins: this user is locked for a while',
        retryAfterS,
      };
    }
    const p = findPrincipal(this.config(), user, now);
    let good = false;
    if (p?.kind === 'user') {
      if (p.password !== undefined) {
        const a = crypto.createHash('sha256').update(password).digest();
        const b = crypto.createHash('sha256').update(p.password).digest();
        good = crypto.timingSafeEqual(a, b);
      } else good = p.verifiers.some((v) => tokenMatchesVerifier(password, v));
    } else tokenMatchesVerifier(password, DUMMY_VERIFIER);
    if (!good) {
      recent.push(now);
      this.failures.set(book, recent);
      // Names tried once and never again would otherwise be kept for ever (one per name sprayed).
      if (this.failures.size > 1000)
        for (const [name, times] of this.failures)
          if (now - (times[times.length - 1] ?? 0) >= LOCK_WINDOW_MS) this.failures.delete(name);
      await new Promise((r) => setTimeout(r, this.delayMs()));
      return { ok: false, status: 401, message: 'password authentication failed' };
    }
    this.failures.delete(book);
    this.sweep(user, now);
    const sessionId = crypto.randomBytes(32).toString('base64url');
    this.sessions.set(sessionId, {
      user,
      credential: credentialOf(p as Principal),
      loggedIn: now,
      lastUsed: now,
    });
    return { ok: true, sessionId };
  }

  /** Forgets every ended session, and `user`'s oldest ones beyond SESSIONS_PER_USER - 1 (a login's room). */
  private sweep(user: string, now: number): void {
    const mine: string[] = [];
    for (const [id, s] of this.sessions) {
      if (ended(s, now)) this.sessions.delete(id);
      else if (s.user === user) mine.push(id); // Map order is login order
    }
    for (const id of mine.slice(0, Math.max(0, mine.length - (SESSIONS_PER_USER - 1))))
      this.sessions.delete(id);
  }

  /** Ends a session. */
  logout(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /**
   * The caller of a request: from its session cookie, or its Bearer token. Undefined when neither
   * authenticates (an unknown or idle session, a user disabled since, an invalid token).
   */
  authenticate(
    sessionId: string | undefined,
    authorization: string | undefined,
    now = Date.now(),
  ): AdminCaller | undefined {
    const config = this.config();
    if (authorization !== undefined) {
      const bearer = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
      if (!bearer) return undefined;
      const check = this.keys.authenticate(bearer[1], now);
      if (!check.ok) return undefined;
      return {
        name: check.identity.keyId,
        via: 'api-key',
        roles: check.identity.roles,
        workspaceAdmin: false,
      };
    }
    if (sessionId === undefined) return undefined;
    const s = this.sessions.get(sessionId);
    if (!s || ended(s, now)) {
      this.sessions.delete(sessionId);
      return undefined;
    }
    const p = findPrincipal(config, s.user, now);
    if (p?.kind !== 'user' || credentialOf(p) !== s.credential) {
      this.sessions.delete(sessionId);
      return undefined;
    }
    s.lastUsed = now;
    return {
      name: s.user,
      via: 'session',
      sessionId,
      roles: rolesOf(config, s.user, 'user', now),
      workspaceAdmin: isWorkspaceAdmin(config, s.user),
    };
  }
}

/** Whether a session is over: idle too long, or logged in too long ago. */
function ended(s: Session, now: number): boolean {
  return now - s.lastUsed > SESSION_IDLE_MS || now - s.loggedIn > SESSION_MAX_MS;
}

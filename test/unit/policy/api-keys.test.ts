// API keys: ids and tokens, expiry (never or at most a year), revocation, the 24-hour rotation window.
import { describe, expect, test } from 'vitest';
import { ScramClientExchange } from '../../../src/auth/scram-client.js';
import { ScramServerExchange } from '../../../src/auth/scram-server.js';
import type { ScramVerifier } from '../../../src/auth/scram-verifier.js';
import {
  createKey,
  keyStatus,
  newKeyId,
  newToken,
  parseExpiry,
  ROTATION_OVERLAP_MS,
  revokeKey,
  rotateKey,
} from '../../../src/policy/api-keys.js';
import { loginVerifiers } from '../../../src/policy/login-verifiers.js';
import type { ApiKey } from '../../../src/policy/policy-schema.js';
import { apiKeySchema } from '../../../src/policy/policy-schema.js';
import { findPrincipal } from '../../../src/policy/principals.js';
import { resolveRoles } from '../../../src/policy/resolve-roles.js';
import { makeConfig } from './policy-fixtures.js';

const NOW = Date.parse('2025-01-01T00:00:00Z');
const DAY = 86_400_000;
const ITER = 64; // fast tests; the CLI uses 4096

function configWith(keys: ApiKey[]) {
  return makeConfig({
    roles: { analyst: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' }] } },
    api_keys: keys,
  });
}

/** Runs one SCRAM login of `password` against a server holding `verifier`; true when it succeeds. */
function login(verifier: ScramVerifier, password: string): { ok: boolean; salt: string } {
  const server = new ScramServerExchange(verifier);
  const client = new ScramClientExchange(password);
  const first = server.clientFirst(client.clientFirst());
  const salt = /s=([^,]+)/.exec(first.toString('latin1'))?.[1] ?? '';
  return { ok: server.clientFinal(client.clientFinal(first)).ok, salt };
}

describe('ids and tokens', () => {
  test('key ids look like pgw_<16 letters or digits>; tokens are pgwt_ and 32 random bytes in base64url', () => {
    const id = newKeyId();
    expect(id).toMatch(/^pgw_[A-Za-z0-9]{16}$/);
    const t = newToken();
    expect(t).toMatch(/^pgwt_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(t.slice(5), 'base64url')).toHaveLength(32);
    expect(newToken()).not.toBe(t);
  });

  test('a created key validates against the schema and logs in with its token only', () => {
    const { key, token, keys } = createKey([], {
      roles: ['analyst'],
      expiresAt: null,
      now: NOW,
      iterations: ITER,
    });
    expect(keys).toEqual([key]);
    expect(apiKeySchema.parse(key)).toEqual(key);
    expect(JSON.stringify(key)).not.toContain(token.slice(5));
    const p = findPrincipal(configWith(keys), key.id, NOW);
    expect(p).toMatchObject({ kind: 'api-key', roles: ['analyst'] });
    const v = loginVerifiers(p!);
    expect(login(v!.primary, token).ok).toBe(true);
    expect(login(v!.primary, newToken()).ok).toBe(false);
    expect(resolveRoles(configWith(keys), p!, {})).toEqual({ ok: true, roles: ['analyst'] });
  });
});

describe('expiry: never, or at most one year (issue 4)', () => {
  test('never, days, hours and ISO dates are read; past and beyond a year are refused', () => {
    expect(parseExpiry('never', NOW)).toEqual({ ok: true, expiresAt: null });
    expect(parseExpiry('90d', NOW)).toEqual({ ok: true, expiresAt: new Date(NOW + 90 * DAY).toISOString() });
    expect(parseExpiry('12h', NOW)).toEqual({
      ok: true,
      expiresAt: new Date(NOW + 12 * 3600_000).toISOString(),
    });
    expect(parseExpiry('365d', NOW).ok).toBe(true);
    expect(parseExpiry('2025-06-01', NOW)).toEqual({ ok: true, expiresAt: '2025-06-01T00:00:00.000Z' });
    expect(parseExpiry('367d', NOW)).toEqual({
      ok: false,
      message: 'expiry "367d" is more than one year away; use never or at most 365d',
    });
    expect(parseExpiry('2024-12-31', NOW)).toMatchObject({ ok: false });
    expect(parseExpiry('soon', NOW)).toMatchObject({ ok: false });
  });

  test('a key whose expiry is more than a year after its creation is rejected at load', () => {
    const { key } = createKey([], { roles: ['analyst'], expiresAt: null, now: NOW, iterations: ITER });
    const r = apiKeySchema.safeParse({ ...key, expires_at: new Date(NOW + 400 * DAY).toISOString() });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/more than one year after created_at/);
  });

  test('an expired key cannot log in (the proxy runs a doomed exchange: 28P01)', () => {
    const { keys, key } = createKey([], {
      roles: ['analyst'],
      expiresAt: new Date(NOW + DAY).toISOString(),
      now: NOW,
      iterations: ITER,
    });
    const config = configWith(keys);
    expect(findPrincipal(config, key.id, NOW + DAY - 1)).not.toBeNull();
    expect(findPrincipal(config, key.id, NOW + DAY)).toBeNull();
    expect(keyStatus(key, NOW)).toBe('active');
    expect(keyStatus(key, NOW + DAY)).toBe('expired');
  });
});

describe('revocation', () => {
  test('a revoked key cannot log in, and its previous token goes with it', () => {
    const created = createKey([], { roles: ['analyst'], expiresAt: null, now: NOW, iterations: ITER });
    const rotated = rotateKey(created.keys, created.key.id, NOW);
    if (!rotated.ok) throw new Error(rotated.message);
    const revoked = revokeKey(rotated.keys, created.key.id);
    if (!revoked.ok) throw new Error(revoked.message);
    expect(revoked.keys[0]).toMatchObject({ revoked: true });
    expect(revoked.keys[0]?.previous_scram).toBeUndefined();
    expect(findPrincipal(configWith(revoked.keys), created.key.id, NOW)).toBeNull();
    expect(keyStatus(revoked.keys[0]!, NOW)).toBe('revoked');
    expect(revokeKey(revoked.keys, 'pgw_nonexistent')).toEqual({
      ok: false,
      message: 'no API key "pgw_nonexistent"',
    });
  });

  test('a revoked or expired key cannot be rotated', () => {
    const created = createKey([], { roles: ['analyst'], expiresAt: null, now: NOW, iterations: ITER });
    const revoked = revokeKey(created.keys, created.key.id);
    if (!revoked.ok) throw new Error(revoked.message);
    expect(rotateKey(revoked.keys, created.key.id, NOW)).toMatchObject({ ok: false });
  });
});

describe('rotation keeps the old token valid for 24 hours (issue 4)', () => {
  const created = createKey([], { roles: ['analyst'], expiresAt: null, now: NOW, iterations: ITER });
  const rotated = rotateKey(created.keys, created.key.id, NOW);
  if (!rotated.ok) throw new Error(rotated.message);
  const config = configWith(rotated.keys);

  test('the new verifier keeps the salt and iteration count, so one exchange serves both tokens', () => {
    const p = findPrincipal(config, created.key.id, NOW + 1000);
    expect(p?.verifiers).toHaveLength(2);
    const v = loginVerifiers(p!);
    expect(v?.alternates).toHaveLength(1);
    expect(v!.alternates[0]!.salt.equals(v!.primary.salt)).toBe(true);
    expect(v!.alternates[0]!.iterations).toBe(v!.primary.iterations);
    // The same salt goes to the client whichever token it holds; each proof checks against its own keys.
    const fresh = login(v!.primary, rotated.token);
    const old = login(v!.alternates[0]!, created.token);
    expect(fresh).toEqual({ ok: true, salt: old.salt });
    expect(old.ok).toBe(true);
    expect(login(v!.primary, created.token).ok).toBe(false);
  });

  test('after 24 hours only the new token is valid', () => {
    const p = findPrincipal(config, created.key.id, NOW + ROTATION_OVERLAP_MS);
    expect(p?.verifiers).toHaveLength(1);
    expect(loginVerifiers(p!)?.alternates).toEqual([]);
    expect(rotated.key.previous_expires_at).toBe(new Date(NOW + ROTATION_OVERLAP_MS).toISOString());
  });

  test('rotating again drops the oldest token at once', () => {
    const again = rotateKey(rotated.keys, created.key.id, NOW + 1000);
    if (!again.ok) throw new Error(again.message);
    expect(again.key.previous_scram).toBe(rotated.key.scram);
    const p = findPrincipal(configWith(again.keys), created.key.id, NOW + 2000);
    expect(p?.verifiers).toEqual([again.key.scram, rotated.key.scram]);
  });

  test('a further verifier with another salt is left out (it cannot share the exchange)', () => {
    const other = createKey([], { roles: ['analyst'], expiresAt: null, now: NOW, iterations: ITER });
    const v = loginVerifiers({
      kind: 'api-key',
      name: 'x',
      roles: [],
      verifiers: [created.key.scram, other.key.scram],
    });
    expect(v?.alternates).toEqual([]);
    expect(loginVerifiers({ kind: 'user', name: 'demo', verifiers: [], password: 'p' })).toBeNull();
  });
});

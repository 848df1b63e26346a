// ApiKeyAuthenticator: a token finds its key; revoked, expired and unknown tokens find none; rotation keeps the old token a day.
import { describe, expect, test } from 'vitest';
import { createScramVerifier } from '../../../src/auth/scram-verifier.js';
import { ApiKeyAuthenticator, tokenMatchesVerifier } from '../../../src/mcp/api-key-auth.js';
import { bearerToken } from '../../../src/mcp/http-endpoint.js';
import { rotateKey } from '../../../src/policy/api-keys.js';
import type { Config } from '../../../src/policy/config-schema.js';
import { loadTestConfig } from '../../helpers/proxy.js';
import { KEY_IDS, mcpConfigObject, TOKENS } from './mcp-harness.js';

const NOW = Date.parse('2025-01-01T00:00:00Z');

describe('ApiKeyAuthenticator', () => {
  test('a token finds its key and the key’s roles; users never authenticate', () => {
    const config = loadTestConfig(mcpConfigObject()).config;
    const auth = new ApiKeyAuthenticator(() => config);
    expect(auth.authenticate(TOKENS.analyst, NOW)).toEqual({
      ok: true,
      identity: { keyId: KEY_IDS.analyst, token: TOKENS.analyst, roles: ['analyst'] },
    });
    expect(auth.authenticate(TOKENS.support, NOW)).toMatchObject({
      ok: true,
      identity: { roles: ['support'] },
    });
    // Cached: the same answer again.
    expect(auth.authenticate(TOKENS.analyst, NOW)).toMatchObject({ ok: true });
    for (const bad of [TOKENS.revoked, TOKENS.expired, 'alice', 'pgwt_nothing'])
      expect(auth.authenticate(bad, NOW)).toEqual({ ok: false, reason: 'invalid' });
    for (const missing of [undefined, '', '  '])
      expect(auth.authenticate(missing, NOW)).toEqual({ ok: false, reason: 'missing' });
  });

  test('a reload that revokes a key, and a key that expires, stop a cached token', () => {
    let config = loadTestConfig(mcpConfigObject()).config;
    const auth = new ApiKeyAuthenticator(() => config);
    expect(auth.authenticate(TOKENS.analyst, NOW).ok).toBe(true);
    config = {
      ...config,
      api_keys: config.api_keys.map((k) =>
        k.id === KEY_IDS.analyst ? { ...k, expires_at: '2025-02-01T00:00:00Z' } : k,
      ),
    } as Config;
    expect(auth.authenticate(TOKENS.analyst, NOW).ok).toBe(true);
    expect(auth.authenticate(TOKENS.analyst, Date.parse('2025-02-02T00:00:00Z')).ok).toBe(false);
    config = {
      ...config,
      api_keys: config.api_keys.map((k) => (k.id === KEY_IDS.analyst ? { ...k, revoked: true } : k)),
    } as Config;
    expect(auth.authenticate(TOKENS.analyst, NOW).ok).toBe(false);
  });

  test('after rotation both tokens work for 24 hours, then only the new one', () => {
    const base = loadTestConfig(mcpConfigObject()).config;
    const rotated = rotateKey(base.api_keys, KEY_IDS.analyst, NOW);
    if (!rotated.ok) throw new Error(rotated.message);
    const config = { ...base, api_keys: rotated.keys } as Config;
    const auth = new ApiKeyAuthenticator(() => config);
    expect(auth.authenticate(rotated.token, NOW)).toMatchObject({
      ok: true,
      identity: { keyId: KEY_IDS.analyst },
    });
    expect(auth.authenticate(TOKENS.analyst, NOW + 3600_000)).toMatchObject({ ok: true });
    expect(auth.authenticate(TOKENS.analyst, NOW + 25 * 3600_000).ok).toBe(false);
    expect(auth.authenticate(rotated.token, NOW + 25 * 3600_000).ok).toBe(true);
  });

  test('tokenMatchesVerifier checks the SCRAM StoredKey', () => {
    const v = createScramVerifier('secret-token', { iterations: 1000 });
    expect(tokenMatchesVerifier('secret-token', v)).toBe(true);
    expect(tokenMatchesVerifier('secret-tokeN', v)).toBe(false);
    expect(tokenMatchesVerifier('secret-token', 'md5abc')).toBe(false);
  });

  test('bearerToken reads only the Bearer scheme', () => {
    expect(bearerToken('Bearer abc.def')).toBe('abc.def');
    expect(bearerToken('bearer   abc ')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken('Bearer a b')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});

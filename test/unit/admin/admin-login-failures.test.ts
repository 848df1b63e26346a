// The admin login's failure book and session lifetimes: locks per name and address, forgotten sprays, equal work for unknown names, bounded sessions.
import crypto from 'node:crypto';
import { afterEach, describe, expect, test, vi } from 'vitest';
import {
  AdminAuth,
  LOCK_AFTER_FAILURES,
  LOCK_WINDOW_MS,
  SESSION_IDLE_MS,
  SESSION_MAX_MS,
  SESSIONS_PER_USER,
} from '../../../src/admin/admin-auth.js';
import { createScramVerifier } from '../../../src/auth/scram-verifier.js';
import type { Config } from '../../../src/policy/config-schema.js';

const config = {
  users: { dba: { scram: createScramVerifier('right') } },
  api_keys: [],
  roles: {},
  groups: {},
  workspace_admins: [],
} as unknown as Config;
const here = '192.0.2.1';
const elsewhere = '198.51.100.7';

function newAuth(): AdminAuth {
  return new AdminAuth(
    () => config,
    () => 0,
  );
}

afterEach(() => vi.restoreAllMocks());

describe('admin login failures', () => {
  test('names tried once are forgotten after the lock window; a name locked within it stays locked', async () => {
    const auth = newAuth();
    // 1,000 names sprayed: their dummy PBKDF2 work is not what this test is about.
    vi.spyOn(crypto, 'pbkdf2Sync').mockReturnValue(Buffer.alloc(32));
    const book = (auth as unknown as { failures: Map<string, number[]> }).failures;
    const t0 = 1_000_000;
    for (let i = 0; i < 1001; i++) await auth.login(`sprayed-${i}`, 'x', here, t0);
    for (let i = 0; i < 5; i++) await auth.login('dba', 'x', here, t0 + LOCK_WINDOW_MS - 10);
    expect(book.size).toBe(1002);
    await auth.login('one-more', 'x', here, t0 + LOCK_WINDOW_MS);
    expect([...book.keys()].map((k) => k.split('\u0000')[1]).sort()).toEqual(['dba', 'one-more']);
    expect(await auth.login('dba', 'right', here, t0 + LOCK_WINDOW_MS)).toMatchObject({
      ok: false,
      status: 429,
    });
  });

  test('failures from one address lock the name there only: the dba logs in from another', async () => {
    const auth = newAuth();
    const t0 = 5_000_000;
    for (let i = 0; i < LOCK_AFTER_FAILURES; i++) await auth.login('dba', 'wrong', here, t0 + i);
    expect(await auth.login('dba', 'right', here, t0 + 10)).toMatchObject({ ok: false, status: 429 });
    expect(await auth.login('dba', 'right', elsewhere, t0 + 10)).toMatchObject({ ok: true });
    expect(await auth.login('dba', 'right', here, t0 + 10 + LOCK_WINDOW_MS)).toMatchObject({ ok: true });
  });

  test('an unknown name costs the same PBKDF2 work as a known one', async () => {
    const auth = newAuth();
    const pbkdf2 = vi.spyOn(crypto, 'pbkdf2Sync');
    await auth.login('dba', 'wrong', here, 1);
    const known = pbkdf2.mock.calls.map((c) => c[2]);
    pbkdf2.mockClear();
    await auth.login('nobody-by-this-name', 'wrong', here, 2);
    const unknown = pbkdf2.mock.calls.map((c) => c[2]);
    expect(known).toEqual([4096]);
    expect(unknown).toEqual(known);
  });
});

describe('admin sessions', () => {
  test('a session in constant use still ends SESSION_MAX_MS after its login', async () => {
    const auth = newAuth();
    const t0 = 10_000_000;
    const r = await auth.login('dba', 'right', here, t0);
    if (!r.ok) throw new Error('login failed');
    const hour = 3600 * 1000;
    let t = t0;
    for (; t + hour <= t0 + SESSION_MAX_MS; t += hour) {
      expect(auth.authenticate(r.sessionId, undefined, t)?.name).toBe('dba');
    }
    expect(auth.authenticate(r.sessionId, undefined, t0 + SESSION_MAX_MS + 1)).toBeUndefined();
  });

  test('a session unused for SESSION_IDLE_MS ends', async () => {
    const auth = newAuth();
    const r = await auth.login('dba', 'right', here, 0);
    if (!r.ok) throw new Error('login failed');
    expect(auth.authenticate(r.sessionId, undefined, SESSION_IDLE_MS)?.name).toBe('dba');
    expect(auth.authenticate(r.sessionId, undefined, 2 * SESSION_IDLE_MS + 1)).toBeUndefined();
  });

  test(`a user holds at most ${SESSIONS_PER_USER} sessions: a new login ends the oldest; ended ones are forgotten`, async () => {
    const auth = newAuth();
    const ids: string[] = [];
    for (let i = 0; i <= SESSIONS_PER_USER; i++) {
      const r = await auth.login('dba', 'right', here, 1000 + i);
      if (!r.ok) throw new Error('login failed');
      ids.push(r.sessionId);
    }
    const sessions = (auth as unknown as { sessions: Map<string, unknown> }).sessions;
    expect(sessions.size).toBe(SESSIONS_PER_USER);
    expect(auth.authenticate(ids[0], undefined, 2000)).toBeUndefined();
    expect(auth.authenticate(ids[1], undefined, 2000)?.name).toBe('dba');
    expect(auth.authenticate(ids[SESSIONS_PER_USER], undefined, 2000)?.name).toBe('dba');
    await auth.login('dba', 'right', elsewhere, 2000 + SESSION_MAX_MS + 1);
    expect(sessions.size).toBe(1);
  });
});

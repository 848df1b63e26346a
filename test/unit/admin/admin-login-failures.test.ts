// The admin login's failure book: a name sprayed once is forgotten after the lock window, a locked name is not.
import { describe, expect, test } from 'vitest';
import { AdminAuth, LOCK_WINDOW_MS } from '../../../src/admin/admin-auth.js';
import type { Config } from '../../../src/policy/config-schema.js';

const config = { users: {}, api_keys: [], roles: {}, groups: {}, workspace_admins: [] } as unknown as Config;

describe('admin login failures', () => {
  test('names tried once are forgotten after the lock window; a name locked within it stays locked', async () => {
    const auth = new AdminAuth(
      () => config,
      () => 0,
    );
    const book = (auth as unknown as { failures: Map<string, number[]> }).failures;
    const t0 = 1_000_000;
    for (let i = 0; i < 1001; i++) await auth.login(`sprayed-${i}`, 'x', t0);
    for (let i = 0; i < 5; i++) await auth.login('dba', 'x', t0 + LOCK_WINDOW_MS - 10);
    expect(book.size).toBe(1002);
    await auth.login('one-more', 'x', t0 + LOCK_WINDOW_MS);
    expect([...book.keys()].sort()).toEqual(['dba', 'one-more']);
    expect(await auth.login('dba', 'x', t0 + LOCK_WINDOW_MS)).toMatchObject({ ok: false, status: 429 });
  });
});

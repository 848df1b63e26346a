// connectionRolesAfterReload: an open session's roles after a reload, or the 28000 that closes it.
import { describe, expect, test } from 'vitest';
import { createKey, revokeKey } from '../../../src/policy/api-keys.js';
import { connectionRolesAfterReload as rolesAfterReload } from '../../../src/policy/connection-roles.js';
import { makeConfig } from './policy-fixtures.js';

const NOW = Date.parse('2025-01-01T00:00:00Z');
const roles = {
  analyst: {
    tenants: ['u/alice'],
    permissions: [{ effect: 'allow', actions: ['SELECT'], database: 'demo' }],
  },
  support: { tenants: ['u/alice'] },
};
const key = createKey([], {
  roles: ['analyst'],
  expiresAt: new Date(NOW + 3600_000).toISOString(),
  now: NOW,
  iterations: 16,
});

describe('after a policy reload (issue 4)', () => {
  test('roles are resolved again under the new config', () => {
    const before = makeConfig({ demo: true, users: { alice: { password: 'a' } }, roles });
    expect(rolesAfterReload(before, { user: 'alice' }, NOW)).toEqual({
      ok: true,
      identity: 'alice',
      roles: ['analyst', 'support'],
    });
    const after = makeConfig({
      demo: true,
      users: { alice: { password: 'a' } },
      roles: { ...roles, support: {} },
    });
    expect(rolesAfterReload(after, { user: 'alice' }, NOW)).toEqual({
      ok: true,
      identity: 'alice',
      roles: ['analyst'],
    });
  });

  test('an identity that lost every role is closed with 28000', () => {
    const after = makeConfig({ demo: true, users: { alice: { password: 'a' } }, roles: { analyst: {} } });
    expect(rolesAfterReload(after, { user: 'alice' }, NOW)).toMatchObject({ ok: false, sqlstate: '28000' });
  });

  test('a session that named a role it may no longer use is closed', () => {
    const after = makeConfig({
      demo: true,
      users: { alice: { password: 'a' } },
      roles: { ...roles, support: { tenants: [] } },
    });
    expect(rolesAfterReload(after, { user: 'alice', requestedRole: 'support' }, NOW)).toEqual({
      ok: false,
      sqlstate: '28000',
      message: 'user "alice" may not use role "support"',
    });
  });

  test('a revoked key, an expired key, a disabled or removed user is closed, saying which', () => {
    const revoked = revokeKey(key.keys, key.key.id);
    if (!revoked.ok) throw new Error(revoked.message);
    const cfg = (apiKeys: unknown, users: Record<string, unknown> = { alice: { password: 'a' } }) =>
      makeConfig({ demo: true, users, roles, api_keys: apiKeys });
    expect(rolesAfterReload(cfg(key.keys), { user: key.key.id }, NOW)).toEqual({
      ok: true,
      identity: key.key.id,
      roles: ['analyst'],
    });
    expect(rolesAfterReload(cfg(revoked.keys), { user: key.key.id }, NOW)).toEqual({
      ok: false,
      sqlstate: '28000',
      message: `API key "${key.key.id}" was revoked`,
    });
    expect(rolesAfterReload(cfg(key.keys), { user: key.key.id }, NOW + 3600_000)).toMatchObject({
      message: `API key "${key.key.id}" has expired`,
    });
    expect(
      rolesAfterReload(cfg([], { alice: { password: 'a', disabled: true } }), { user: 'alice' }, NOW),
    ).toMatchObject({
      message: 'user "alice" is disabled',
    });
    expect(rolesAfterReload(cfg([], {}), { user: 'alice' }, NOW)).toMatchObject({
      message: 'user "alice" no longer exists',
    });
  });
});

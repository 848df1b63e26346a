// resolveRoles: each row of seed 000's table, named roles, tenants, groups, API keys, no role.
import { describe, expect, test } from 'vitest';
import type { Principal } from '../../../src/policy/principals.js';
import { resolveRoles } from '../../../src/policy/resolve-roles.js';
import { makeConfig } from './policy-fixtures.js';

const users = {
  alice: { password: 'a' },
  bob: { password: 'b' },
  carol: { password: 'c' },
  root: { password: 'r' },
  nobody: { password: 'n' },
};
const roles = {
  analytics: { tenants: ['g/analytics_f'] },
  everyone: { tenants: ['*'] },
  sales: { tenants: ['u/bob'] },
  secret: { tenants: [] },
};
const base = {
  demo: true,
  users,
  groups: { analytics_f: { members: ['alice'] } },
  workspace_admins: ['root'],
  roles,
};

const user = (name: string): Principal => ({ kind: 'user', name, verifiers: [] });
const key = (name: string, r: string[]): Principal => ({ kind: 'api-key', name, verifiers: [], roles: r });

describe('a connection that names a role (seed 000: "It then holds that role alone, whoever runs the job")', () => {
  const config = makeConfig({ ...base, default_role: 'everyone' });

  test('a tenant of the role holds that role alone', () => {
    expect(resolveRoles(config, user('bob'), { requestedRole: 'sales' })).toEqual({
      ok: true,
      roles: ['sales'],
    });
  });

  test('a tenant through a group (g/<group>) holds it', () => {
    expect(resolveRoles(config, user('alice'), { requestedRole: 'analytics' })).toEqual({
      ok: true,
      roles: ['analytics'],
    });
  });

  test('`*` makes everyone in the workspace a tenant', () => {
    expect(resolveRoles(config, user('carol'), { requestedRole: 'everyone' })).toEqual({
      ok: true,
      roles: ['everyone'],
    });
  });

  test('someone who is not a tenant is refused with 28000', () => {
    expect(resolveRoles(config, user('carol'), { requestedRole: 'sales' })).toEqual({
      ok: false,
      sqlstate: '28000',
      message: 'user "carol" may not use role "sales"',
    });
  });

  test('workspace admins can always use any role regardless of tenant assignments, by naming it', () => {
    expect(resolveRoles(config, user('root'), { requestedRole: 'secret' })).toEqual({
      ok: true,
      roles: ['secret'],
    });
  });

  test('a role that does not exist is refused', () => {
    expect(resolveRoles(config, user('root'), { requestedRole: 'ghost' })).toMatchObject({
      ok: false,
      sqlstate: '28000',
      message: 'role "ghost" does not exist',
    });
  });

  test('an empty pgwarden.role names no role', () => {
    expect(resolveRoles(config, user('bob'), { requestedRole: '' })).toEqual({
      ok: true,
      roles: ['everyone', 'sales'],
    });
  });
});

describe("seed 000's table: a connection that names no role", () => {
  test('default `admin`: admin, when the identity is a workspace admin or a tenant of admin; no other role is added', () => {
    const config = makeConfig({
      ...base,
      roles: { ...roles, admin: { tenants: ['u/alice'] } },
      default_role: 'admin',
    });
    expect(resolveRoles(config, user('alice'), {})).toEqual({ ok: true, roles: ['admin'] });
    expect(resolveRoles(config, user('root'), {})).toEqual({ ok: true, roles: ['admin'] });
    // bob is a tenant of sales and of everyone, but with the default `admin` nothing is added.
    expect(resolveRoles(config, user('bob'), {})).toMatchObject({ ok: false, sqlstate: '28000' });
  });

  test('another default role: that role when the identity may use it, plus every role the identity is a tenant of', () => {
    const config = makeConfig({ ...base, default_role: 'everyone' });
    expect(resolveRoles(config, user('alice'), {})).toEqual({ ok: true, roles: ['everyone', 'analytics'] });
    expect(resolveRoles(config, user('bob'), {})).toEqual({ ok: true, roles: ['everyone', 'sales'] });
    expect(resolveRoles(config, user('carol'), {})).toEqual({ ok: true, roles: ['everyone'] });
  });

  test('another default role the identity may not use: only its tenant roles', () => {
    const config = makeConfig({ ...base, default_role: 'sales' });
    expect(resolveRoles(config, user('alice'), {})).toEqual({ ok: true, roles: ['analytics', 'everyone'] });
    expect(resolveRoles(config, user('bob'), {})).toEqual({ ok: true, roles: ['sales', 'everyone'] });
  });

  test('no default role: only the roles the identity is a tenant of', () => {
    const config = makeConfig({ ...base, default_role: null });
    expect(resolveRoles(config, user('alice'), {})).toEqual({ ok: true, roles: ['analytics', 'everyone'] });
    const noStar = makeConfig({ ...base, roles: { ...roles, everyone: { tenants: [] } } });
    expect(resolveRoles(noStar, user('carol'), {})).toMatchObject({ ok: false, sqlstate: '28000' });
  });

  test('being a workspace admin adds no role to a connection that names none, but the admin may use the default', () => {
    const noStar = { ...roles, everyone: { tenants: [] } };
    expect(resolveRoles(makeConfig({ ...base, roles: noStar }), user('root'), {})).toMatchObject({
      ok: false,
      sqlstate: '28000',
    });
    expect(
      resolveRoles(makeConfig({ ...base, roles: noStar, default_role: 'secret' }), user('root'), {}),
    ).toEqual({
      ok: true,
      roles: ['secret'],
    });
  });

  test('`admin` is never added from its tenant list when it is not the default', () => {
    const config = makeConfig({
      ...base,
      roles: { ...roles, admin: { tenants: ['*'] } },
      default_role: 'everyone',
    });
    expect(resolveRoles(config, user('carol'), {})).toEqual({ ok: true, roles: ['everyone'] });
    expect(resolveRoles(config, user('carol'), { requestedRole: 'admin' })).toEqual({
      ok: true,
      roles: ['admin'],
    });
  });

  test('a tenant only of `admin` is told why it holds no role, not that it is a tenant of none', () => {
    const config = makeConfig({ ...base, roles: { admin: { tenants: ['u/carol'] } } });
    expect(resolveRoles(config, user('carol'), {})).toEqual({
      ok: false,
      sqlstate: '28000',
      message:
        'no role: user "carol" is a tenant only of role "admin", which a connection holds only when it names it (-c pgwarden.role=admin) or when it is the default role; there is no default role',
    });
    expect(resolveRoles(config, user('carol'), { requestedRole: 'admin' })).toEqual({
      ok: true,
      roles: ['admin'],
    });
  });

  test('a connection left with no role at all is refused with an error instead of returning no rows', () => {
    const config = makeConfig({ ...base, roles: { sales: { tenants: ['u/bob'] } } });
    expect(resolveRoles(config, user('nobody'), {})).toEqual({
      ok: false,
      sqlstate: '28000',
      message: 'no role: user "nobody" is a tenant of no role and there is no default role',
    });
    const withDefault = makeConfig({
      ...base,
      roles: { sales: { tenants: ['u/bob'] } },
      default_role: 'sales',
    });
    expect(resolveRoles(withDefault, user('nobody'), {})).toEqual({
      ok: false,
      sqlstate: '28000',
      message: 'no role: user "nobody" is a tenant of no role and may not use the default role "sales"',
    });
  });

  test('group membership counts only for the groups that list the user', () => {
    const config = makeConfig({ ...base, roles: { analytics: { tenants: ['g/analytics_f'] } } });
    expect(resolveRoles(config, user('alice'), {})).toEqual({ ok: true, roles: ['analytics'] });
    expect(resolveRoles(config, user('bob'), {})).toMatchObject({ ok: false });
  });
});

describe('API keys hold exactly their own roles (issue 4)', () => {
  const config = makeConfig({ ...base, default_role: 'everyone' });

  test('no default role and no tenant roles are added', () => {
    expect(resolveRoles(config, key('pgw_abcdefgh', ['sales']), {})).toEqual({ ok: true, roles: ['sales'] });
  });

  test('a key may name one of its own roles to narrow to it, and no other', () => {
    const k = key('pgw_abcdefgh', ['sales', 'analytics']);
    expect(resolveRoles(config, k, { requestedRole: 'analytics' })).toEqual({
      ok: true,
      roles: ['analytics'],
    });
    expect(resolveRoles(config, k, { requestedRole: 'everyone' })).toEqual({
      ok: false,
      sqlstate: '28000',
      message: 'API key "pgw_abcdefgh" does not hold role "everyone"',
    });
  });

  test('a key whose roles are gone (after a reload) holds no role and is refused', () => {
    expect(resolveRoles(config, key('pgw_abcdefgh', ['deleted']), {})).toMatchObject({
      ok: false,
      sqlstate: '28000',
    });
  });
});

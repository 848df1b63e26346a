// checkDatabaseAccess: seed 004's table of databases nobody has written a rule for, at connect.
import { describe, expect, test } from 'vitest';
import { checkDatabaseAccess, databaseIsRuled } from '../../../src/policy/database-access.js';
import { makeConfig } from './policy-fixtures.js';

const config = makeConfig({
  roles: { r: { permissions: [{ effect: 'allow', actions: ['SELECT'], database: 'demo' }] } },
});

describe('databases nobody has written a rule for (seed 004)', () => {
  test('Local: allowed — the DSN is yours, on your machine', () => {
    expect(checkDatabaseAccess(config, ['r'], 'other', 'local')).toEqual({ ok: true, unruled: true });
  });

  test('Proxified: refused — nothing is granted that a role did not grant', () => {
    expect(checkDatabaseAccess(config, ['r'], 'other', 'proxified')).toEqual({
      ok: false,
      sqlstate: '42501',
      message: 'permission denied for database "other"',
      detail:
        'No role of the workspace has a rule for database other; a proxified connection gets nothing a role did not grant.',
    });
  });

  test('MCP: refused — an agent gets what its key’s roles name, and nothing else', () => {
    expect(checkDatabaseAccess(config, ['r'], 'other', 'mcp')).toMatchObject({
      ok: false,
      sqlstate: '42501',
    });
  });

  test('a database some role mentions is open at connect on every kind of connection', () => {
    for (const kind of ['local', 'proxified', 'mcp'] as const)
      expect(checkDatabaseAccess(config, ['r'], 'demo', kind)).toEqual({ ok: true, unruled: false });
  });

  test('a mention by any role of the workspace counts, not only the caller’s, and a deny is a mention', () => {
    const c = makeConfig({
      roles: {
        r: { permissions: [{ effect: 'allow', actions: ['SELECT'], database: 'demo' }] },
        other: { permissions: [{ effect: 'deny', actions: ['SELECT'], database: 'other' }] },
      },
    });
    expect(databaseIsRuled(c, 'other')).toBe(true);
    expect(checkDatabaseAccess(c, ['r'], 'other', 'local')).toEqual({ ok: true, unruled: false });
  });

  test('a mentioned database where none of the caller’s roles grants anything is refused with 28000 (issue 16)', () => {
    const c = makeConfig({
      roles: {
        r: { permissions: [{ effect: 'allow', actions: ['SELECT'], database: 'demo' }] },
        d: { permissions: [{ effect: 'deny', actions: ['SELECT'], database: 'other' }] },
        other: { permissions: [{ effect: 'allow', actions: ['SELECT'], database: 'other' }] },
      },
    });
    for (const kind of ['proxified', 'mcp'] as const) {
      expect(checkDatabaseAccess(c, ['r'], 'other', kind)).toEqual({
        ok: false,
        sqlstate: '28000',
        message: 'permission denied for database "other"',
        detail: 'None of the roles of this connection (r) grants anything on database other.',
      });
      // A deny grants nothing either.
      expect(checkDatabaseAccess(c, ['r', 'd'], 'other', kind)).toMatchObject({
        ok: false,
        sqlstate: '28000',
      });
      expect(checkDatabaseAccess(c, ['r', 'other'], 'other', kind)).toEqual({ ok: true, unruled: false });
    }
    expect(checkDatabaseAccess(c, ['r'], 'other', 'local')).toEqual({ ok: true, unruled: false });
  });

  test('`*` counts as a mention of every database', () => {
    const c = makeConfig({
      roles: { r: { permissions: [{ effect: 'allow', actions: ['SELECT'], database: '*' }] } },
    });
    expect(checkDatabaseAccess(c, ['r'], 'other', 'mcp')).toEqual({ ok: true, unruled: false });
  });

  test('app-level rules are no mention', () => {
    const c = makeConfig({ roles: { r: { permissions: [{ effect: 'allow', actions: ['audit_read'] }] } } });
    expect(databaseIsRuled(c, 'demo')).toBe(false);
  });

  test('no role at all is refused with 28000; an unknown database with 3D000', () => {
    expect(checkDatabaseAccess(config, [], 'demo', 'local')).toMatchObject({ ok: false, sqlstate: '28000' });
    expect(checkDatabaseAccess(config, ['r'], 'nope', 'local')).toEqual({
      ok: false,
      sqlstate: '3D000',
      message: 'database "nope" does not exist',
    });
  });
});

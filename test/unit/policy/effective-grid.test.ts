// The permission grid's cells: the effective result of each action on each scope for a role, and the rule that decides it.
import { describe, expect, test } from 'vitest';
import {
  effectiveAppAction,
  effectiveCell,
  gridObject,
  gridVerdicts,
} from '../../../src/policy/effective-grid.js';
import { denySee, makeConfig } from './policy-fixtures.js';

const config = makeConfig({
  roles: {
    analyst: {
      tenants: [],
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
        denySee('public.users.email'),
        { effect: 'allow', actions: ['workspace_roles'] },
      ],
    },
    intern: {
      tenants: [],
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'MANAGE'], database: '*' },
        { effect: 'deny', actions: ['workspace_roles'] },
      ],
    },
  },
});

describe('effective grid cells', () => {
  test('a column cell is decided by the deny on it, its neighbour by the database allow', () => {
    const email = { database: 'demo', schema: 'public', table: 'users', column: 'email' };
    expect(effectiveCell(config, ['analyst'], 'SEE', email)).toEqual({
      granted: false,
      rule: { role: 'analyst', index: 1, effect: 'deny', scope: 'demo.public.users.email' },
    });
    expect(effectiveCell(config, ['analyst'], 'SEE', { ...email, column: 'name' })).toEqual({
      granted: true,
      rule: { role: 'analyst', index: 0, effect: 'allow', scope: 'demo' },
    });
    expect(effectiveCell(config, ['analyst'], 'INSERT', email)).toEqual({ granted: false });
  });

  test('schema and database rows stand for an object no narrower rule names; `*` is every database', () => {
    expect(gridObject({ database: 'demo', schema: 'public' }, 'SELECT')).toEqual({
      level: 'table',
      schema: 'public',
      table: '*',
    });
    expect(
      effectiveCell(config, ['analyst'], 'SELECT', { database: 'demo', schema: 'public' })?.granted,
    ).toBe(true);
    expect(effectiveCell(config, ['analyst'], 'SELECT', { database: '*' })).toEqual({ granted: false });
    expect(effectiveCell(config, ['intern'], 'SELECT', { database: 'other' })?.rule?.scope).toBe('*');
  });

  test('MANAGE has a cell on a database only', () => {
    expect(effectiveCell(config, ['intern'], 'MANAGE', { database: 'demo' })).toEqual({
      granted: true,
      rule: { role: 'intern', index: 0, effect: 'allow', scope: '*' },
    });
    expect(effectiveCell(config, ['intern'], 'MANAGE', { database: 'demo', schema: 'public' })).toBeNull();
    expect(
      gridVerdicts(config, ['intern'], [{ database: 'demo', schema: 's', table: 't' }]).rows[0]?.cells.MANAGE,
    ).toBeNull();
  });

  test('app-level rows: deny wins across roles, default deny', () => {
    expect(effectiveAppAction(config, ['analyst'], 'workspace_roles')).toEqual({
      granted: true,
      rule: { role: 'analyst', index: 2, effect: 'allow', scope: '*' },
    });
    expect(effectiveAppAction(config, ['analyst', 'intern'], 'workspace_roles')).toEqual({
      granted: false,
      rule: { role: 'intern', index: 1, effect: 'deny', scope: '*' },
    });
    expect(effectiveAppAction(config, ['analyst'], 'audit_read')).toEqual({ granted: false });
    expect(Object.keys(gridVerdicts(config, ['analyst'], []).app)).toContain('connect_as_viewer');
  });
});

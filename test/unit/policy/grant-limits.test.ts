// An editor never grants more than it holds: allows added, denies lifted, tenants and keys, app-level actions, workspace admins.
import { describe, expect, test } from 'vitest';
import type { Config } from '../../../src/policy/config-schema.js';
import { grantsBeyondEditor, newlyHeldRules } from '../../../src/policy/grant-limits.js';
import { denySee, makeConfig } from './policy-fixtures.js';

const SCRAM =
  'SCRAM-SHA-256$4096:peQDLa5/4K6NmL1VXDy/1Q==$K3Ef+ZRyDWuztGiN6LDft9Vedmc48luoNeD7Bvwq1+U=:qY73aKSdm/xgz8AyaeDGZOmNPa6kzWFCBbAnx2LD3IU=';

function base(): Config {
  return makeConfig({
    users: { ed: { scram: SCRAM }, ann: { scram: SCRAM }, root: { scram: SCRAM } },
    workspace_admins: ['root'],
    roles: {
      editor: {
        tenants: ['u/ed'],
        permissions: [
          { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
          denySee('public.users.email'),
          { effect: 'allow', actions: ['workspace_roles'] },
        ],
      },
      reader: {
        tenants: ['u/ann'],
        permissions: [
          { effect: 'allow', actions: ['SELECT'], database: 'demo' },
          denySee('public.users.email'),
        ],
      },
      dba: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE', 'MANAGE'], database: '*' }] },
    },
  });
}

const ed = { name: 'ed', roles: ['editor'], workspaceAdmin: false };
const root = { name: 'root', roles: [], workspaceAdmin: true };

function edit(f: (c: Config) => void): { before: Config; after: Config } {
  const before = base();
  const after = structuredClone(before);
  f(after);
  return { before, after };
}

function beyond(editor: typeof ed, e: { before: Config; after: Config }): string[] {
  return grantsBeyondEditor(e.before, editor, newlyHeldRules(e.before, e.after, Date.now()));
}

describe('grant limits (pgwarden, beyond seed 004)', () => {
  test('granting what the editor holds is fine; narrowing always is', () => {
    const e = edit((c) => {
      c.roles.reader!.permissions.push({
        effect: 'allow',
        actions: ['SEE'],
        database: 'demo',
        schema: 'public',
        table: 'orgs',
      });
      c.roles.reader!.permissions.push({
        effect: 'deny',
        actions: ['SELECT'],
        database: 'demo',
        schema: 'public',
        table: 'x',
      });
    });
    expect(beyond(ed, e)).toEqual([]);
  });

  test('an editor without MANAGE on a database cannot grant MANAGE there', () => {
    const e = edit((c) =>
      c.roles.reader!.permissions.push({ effect: 'allow', actions: ['MANAGE'], database: 'demo' }),
    );
    expect(beyond(ed, e)).toEqual(['cannot grant MANAGE on demo: ed does not hold it there']);
  });

  test('lifting a deny grants what it denied: refused where the editor is denied too', () => {
    const e = edit((c) => {
      c.roles.reader!.permissions = c.roles.reader!.permissions.filter((p) => p.effect === 'allow');
    });
    expect(beyond(ed, e)).toEqual(['cannot grant SEE on demo.public.users.email: ed does not hold it there']);
  });

  test('SEE on a whole table is beyond an editor denied one of its columns', () => {
    const e = edit((c) =>
      c.roles.reader!.permissions.push({
        effect: 'allow',
        actions: ['SEE'],
        database: 'demo',
        schema: 'public',
        table: 'users',
      }),
    );
    expect(beyond(ed, e)).toEqual(['cannot grant SEE on demo.public.users: ed does not hold it there']);
  });

  test('adding a tenant to a stronger role grants that role; app-level actions too', () => {
    expect(
      beyond(
        ed,
        edit((c) => c.roles.dba!.tenants.push('u/ann')),
      ),
    ).toEqual([
      'cannot grant SELECT on *: ed does not hold it there',
      'cannot grant SEE on *: ed does not hold it there',
      'cannot grant MANAGE on *: ed does not hold it there',
    ]);
    expect(
      beyond(
        ed,
        edit((c) => c.roles.reader!.permissions.push({ effect: 'allow', actions: ['workspace_users'] })),
      ),
    ).toEqual(['cannot grant workspace_users: ed does not hold it']);
  });

  test('a workspace admin holds what any one role holds, and every app-level action', () => {
    expect(
      beyond(
        root,
        edit((c) => c.roles.dba!.tenants.push('u/ann')),
      ),
    ).toEqual([]);
    expect(
      beyond(
        root,
        edit((c) => c.roles.reader!.permissions.push({ effect: 'allow', actions: ['workspace_users'] })),
      ),
    ).toEqual([]);
  });
});

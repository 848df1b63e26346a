// Schema pgwarden (the policy store, the set logins' passwords) is MANAGE only, whatever the rules say, and set logins hold nothing on it upstream.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { ensureBookkeeping } from '../../src/roles/bookkeeping.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { ownerClient } from '../helpers/proxy-fixture.js';

/** The demo config in `mode`, where alice's role allows every row action and SEE on everything, schema pgwarden named too. */
function allowEverything(mode: 'managed' | 'single'): Record<string, unknown> {
  const cfg = demoConfigObject();
  const db = (cfg.databases as Record<string, Record<string, unknown>>).demo as Record<string, unknown>;
  db.roles = mode;
  if (mode === 'single') delete db.role_prefix;
  const roles = cfg.roles as Record<string, { permissions: unknown[] }>;
  const all = ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'SEE'];
  (roles.analyst as { permissions: unknown[] }).permissions = [
    { effect: 'allow', actions: all, database: '*' },
    { effect: 'allow', actions: all, database: 'demo', schema: 'pgwarden' },
    { effect: 'allow', actions: all, database: 'demo', schema: 'pgwarden', table: 'role_set_logins' },
  ];
  return cfg;
}

/** Every way a caller could read or write schema pgwarden through a statement. */
const STATEMENTS = [
  'select * from pgwarden.role_set_logins',
  'select password from pgwarden.role_set_logins where login = current_user',
  'select count(*) from pgwarden.role_set_logins',
  'select exists (select 1 from pgwarden.role_set_logins)',
  'table pgwarden.role_set_logins',
  'with x as (select login from pgwarden.role_set_logins) select 1',
  "insert into pgwarden.role_set_logins (login, workspace, roles, role_oids, password) values ('x', '', '{}', '{}', 'x')",
  "update pgwarden.role_set_logins set password = 'x'",
  'delete from pgwarden.role_set_logins',
  'select * from own_schema_probe.set_login_names',
  'explain select * from pgwarden.role_set_logins',
  'prepare p as select password from pgwarden.role_set_logins',
  'declare c cursor for select password from pgwarden.role_set_logins',
];

const owner = { c: undefined as pg.Client | undefined };
beforeAll(async () => {
  owner.c = await ownerClient();
  // The table a managed proxy makes at start, made now for the view below.
  await ensureBookkeeping(owner.c);
  // A view in another schema whose body reads schema pgwarden (made behind pgwarden's back).
  await owner.c.query(
    'create schema if not exists own_schema_probe; create or replace view own_schema_probe.set_login_names as select login, password from pgwarden.role_set_logins',
  );
});
afterAll(async () => {
  await owner.c?.query('drop schema if exists own_schema_probe cascade');
  await owner.c?.end();
});

for (const mode of ['managed', 'single'] as const) {
  describe(`schema pgwarden under roles: ${mode}, with rules that allow everything`, () => {
    let proxy: TestProxy;
    let alice: pg.Client;
    beforeAll(async () => {
      proxy = await startTestProxy(allowEverything(mode));
      alice = await proxy.client('alice');
      await alice.query('begin');
    });
    afterAll(async () => {
      await alice?.end();
      await proxy?.close();
    });

    for (const sql of STATEMENTS) {
      test(`alice: ${sql}: 42501 naming the schema, in the analysis`, async () => {
        await alice.query('savepoint s');
        const e = await alice.query(sql).then(
          () => null,
          (x: pg.DatabaseError) => x,
        );
        await alice.query('rollback to savepoint s');
        expect(e?.code).toBe('42501');
        expect(e?.message).toMatch(
          /^permission denied for database demo: schema pgwarden \(pgwarden's own tables/,
        );
      });
    }

    test('alice: by the search path, too', async () => {
      await alice.query('savepoint s');
      await alice.query('set local search_path = pgwarden, public');
      const e = await alice.query('select login from role_set_logins').then(
        () => null,
        (x: pg.DatabaseError) => x,
      );
      await alice.query('rollback to savepoint s');
      expect(e?.code).toBe('42501');
      expect(e?.message).toContain('schema pgwarden');
    });

    test('alice may still read the tables of the database', async () => {
      expect((await alice.query('select ssn from users where id = 1')).rows).toEqual([
        { ssn: '901-13-7919' },
      ]);
    });

    test('dba (MANAGE) may read it', async () => {
      const dba = await proxy.client('dba');
      try {
        expect(
          (await dba.query('select count(*)::int >= 0 as ok from pgwarden.role_set_logins')).rows,
        ).toEqual([{ ok: true }]);
      } finally {
        await dba.end();
      }
    });
  });
}

describe('the third wall: set logins hold no privilege on schema pgwarden', () => {
  test('has_*_privilege says no for every set login, and a set login reading it directly gets 42501', async () => {
    const proxy = await startTestProxy(allowEverything('managed'));
    try {
      const alice = await proxy.client('alice');
      const login = (await alice.query('select current_user as u')).rows[0].u as string;
      await alice.end();
      const c = owner.c as pg.Client;
      const logins = (
        await c.query<{ login: string; password: string }>(
          'select login, password from pgwarden.role_set_logins',
        )
      ).rows;
      expect(logins.map((l) => l.login)).toContain(login);
      for (const { login: l } of logins) {
        const r = await c.query(
          `select has_schema_privilege($1, 'pgwarden', 'USAGE') as usage,
                  has_schema_privilege($1, 'pgwarden', 'CREATE') as create,
                  coalesce(bool_or(has_table_privilege($1, k.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
                                   or has_any_column_privilege($1, k.oid, 'SELECT, INSERT, UPDATE, REFERENCES')), false) as tables
             from pg_class k where k.relnamespace = 'pgwarden'::regnamespace`,
          [l],
        );
        expect(r.rows, l).toEqual([{ usage: false, create: false, tables: false }]);
      }
      const { port } = inject('pg');
      const password = logins.find((l) => l.login === login)?.password as string;
      const direct = new pg.Client({ host: '127.0.0.1', port, user: login, password, database: 'demo' });
      await direct.connect();
      try {
        await expect(direct.query('select password from pgwarden.role_set_logins')).rejects.toMatchObject({
          code: '42501',
          message: 'permission denied for schema pgwarden',
        });
      } finally {
        await direct.end();
      }
    } finally {
      await proxy.close();
    }
  });
});

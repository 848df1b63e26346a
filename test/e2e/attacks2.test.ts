// Second round of attacks on hidden columns (users.email, users.ssn, orgs.secret) and on the relay.
// describe('leaks'): findings — each asserts the SAFE behaviour and fails until the product is fixed.
// describe('blocked'): attacks that are correctly stopped today, kept as regression guards.
// Corpus: corpus/attacks2.yaml.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD } from '../../src/embedded/demo.js';
import { BackendCode } from '../../src/wire/codes.js';
import type { Frame } from '../../src/wire/framer.js';
import { bind, execute, flush, parse, sync } from '../../src/wire/frontend-encode.js';
import { ddl } from '../helpers/ddl.js';
import { cells, EMAILS, errorCodes, inRollback, outcome, SSNS } from '../helpers/outcomes.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { RawClient } from '../helpers/raw-client.js';

let proxy: TestProxy;
let alice: pg.Client;
let bob: pg.Client;
beforeAll(async () => {
  proxy = await startTestProxy();
  alice = await proxy.client('alice');
  bob = await proxy.client('bob');
});
afterAll(async () => {
  await alice.end();
  await bob.end();
  await proxy.close();
});

/** A direct connection to the test PostgreSQL as the demo tables' owner (setup and cleanup only). */
async function owner(): Promise<pg.Client> {
  const { port } = inject('pg');
  const c = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'pgwarden_app',
    password: DEMO_APP_PASSWORD,
    database: 'demo',
  });
  await c.connect();
  return c;
}

async function rawAlice(): Promise<RawClient> {
  const c = await RawClient.connect(proxy.port);
  await c.login({ user: 'alice', database: 'demo' }, 'alice');
  return c;
}

/** Frames up to and including the next ErrorResponse (no ReadyForQuery follows before a Sync). */
async function untilError(c: RawClient): Promise<Frame[]> {
  const out: Frame[] = [];
  for (;;) {
    const f = await c.next();
    out.push(f);
    if (f.code === BackendCode.ErrorResponse) return out;
  }
}

describe('leaks', () => {
  describe('extended protocol: messages the upstream ignores after an error are still recorded', () => {
    // After an error in an extended batch, Postgres ignores every message until Sync. pgwarden
    // drops the owed replies (error()), but it does not skip the client's later messages: a Parse
    // sent after the error is recorded as the statement's new plan, though the upstream never ran
    // it, and the ReadyForQuery that ends the batch drops its expectation without the undo.
    test('Parse x after an upstream error: Bind x runs the old x (ssn) under the new plan (no mask)', async () => {
      const c = await rawAlice();
      try {
        c.write(Buffer.concat([parse('x', 'select id, ssn from users order by id limit 3'), sync()]));
        await c.untilReady();
        // An error in an extended batch with no Sync yet: the upstream now skips to Sync.
        c.write(Buffer.concat([parse('', 'select 1/0'), bind({}), execute(''), flush()]));
        expect(errorCodes(await untilError(c))).toEqual(['22012']);
        // Ignored upstream (x keeps the ssn query); recorded by pgwarden as x = an unmasked query.
        c.write(Buffer.concat([parse('x', 'select id, name from users order by id limit 3'), sync()]));
        await c.untilReady();
        c.write(Buffer.concat([bind({ statement: 'x' }), execute(''), sync()]));
        const frames = await c.untilReady();
        const got = cells(frames);
        for (const ssn of SSNS) expect(got).not.toContain(ssn);
      } finally {
        c.end();
      }
    });
  });

  describe('user code the analysis does not see: operators, overloads, domains', () => {
    // DESIGN.md "Side channels": user-defined functions and casts to domains whose checks call
    // user code need MANAGE. The analysis checks FuncCall names only.
    let dba: pg.Client;
    beforeAll(async () => {
      dba = await proxy.client('dba');
      await ddl(dba, 'drop schema if exists atk2 cascade');
      await dba.query('create schema atk2');
      await dba.query(
        "create function atk2.pick_email(int, int) returns text language sql stable as 'select email from public.users where id = $1'",
      );
      await dba.query('create operator atk2.### (leftarg = int, rightarg = int, function = atk2.pick_email)');
      // A pg_catalog name with no integer overload: Postgres picks this one for length(<int>).
      await dba.query(
        "create function atk2.length(integer) returns text language sql stable as 'select ssn from public.users where id = $1'",
      );
      await dba.query('create domain atk2.has_email as int check (atk2.pick_email(value, 0) is not null)');
    });
    afterAll(async () => {
      await ddl(dba, 'drop schema atk2 cascade');
      await dba.end();
    });

    test('an unqualified user-defined operator runs its function without MANAGE', async () => {
      const c = await proxy.client('alice');
      try {
        // The function itself is refused: MANAGE.
        expect((await outcome(c, 'select atk2.pick_email(1, 0)')).code).toBe('42501');
        await c.query('set search_path = public, atk2');
        const r = await outcome(c, 'select 1 ### 0 as e');
        expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
        expect(r.code).toBe('42501');
      } finally {
        await c.end();
      }
    });

    test('length(<integer>) is read as pg_catalog.length but Postgres calls a user overload', async () => {
      const c = await proxy.client('alice');
      try {
        await c.query('set search_path = public, atk2');
        const r = await outcome(c, 'select length(id) as l from users where id = 1');
        expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
        expect(r.code).toBe('42501');
      } finally {
        await c.end();
      }
    });

    test('a cast to a domain runs its CHECK (user code): 23514 answers "is email null" per row', async () => {
      // id 7 (Gus Rademaker) has no email, id 1 has one.
      const hasEmail = await outcome(alice, 'select 1::atk2.has_email');
      const noEmail = await outcome(alice, 'select 7::atk2.has_email');
      expect(noEmail.code).toBe('42501');
      expect(hasEmail.code).toBe('42501');
    });
  });

  describe('search_path "$user" is not expanded', () => {
    // Postgres reads "$user" as the session user's schema (the upstream login's: pgwarden_app);
    // the analysis looks for a schema literally named "$user", finds none, and resolves the next
    // schema on the path. Rails and others SET search_path TO "$user", public on connect.
    let p2: TestProxy;
    let setup: pg.Client;
    beforeAll(async () => {
      const cfg = demoConfigObject();
      const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
      roles.analyst?.permissions.push({
        effect: 'deny',
        actions: ['SEE'],
        database: 'demo',
        schema: 'pgwarden_app',
        table: 'atk2_accounts',
        column: 'secret',
      });
      setup = await owner();
      await setup.query('drop schema if exists pgwarden_app cascade');
      await setup.query('drop table if exists public.atk2_accounts');
      await setup.query('create schema pgwarden_app');
      await setup.query('create table pgwarden_app.atk2_accounts (id int, secret text)');
      await setup.query("insert into pgwarden_app.atk2_accounts values (1, 'app-secret-7731')");
      // A same-named table further down the path, with nothing hidden.
      await setup.query('create table public.atk2_accounts (id int, secret text)');
      await setup.query("insert into public.atk2_accounts values (1, 'public-value')");
      p2 = await startTestProxy(cfg);
    });
    afterAll(async () => {
      await p2.close();
      await setup.query('drop schema if exists pgwarden_app cascade');
      await setup.query('drop table if exists public.atk2_accounts');
      await setup.end();
    });

    test('SET search_path = "$user", public: an expression over pgwarden_app.atk2_accounts.secret', async () => {
      const c = await p2.client('alice');
      try {
        // The hidden column is masked, and refused in an expression, when named plainly.
        const plain = await outcome(c, 'select upper(secret) from pgwarden_app.atk2_accounts');
        expect(plain.code).toBe('42501');
        await c.query('set search_path = "$user", public');
        const r = await outcome(c, 'select upper(secret) as s from atk2_accounts');
        expect(JSON.stringify(r.rows)).not.toContain('APP-SECRET-7731');
      } finally {
        await c.end();
      }
    });
  });

  describe('writes as reads through visible columns', () => {
    // DESIGN.md "Writes as reads" refuses a write into a hidden column under a unique constraint,
    // but a write into a VISIBLE column also makes Postgres check constraints that read the hidden
    // one: a partial unique index whose predicate reads it, a unique key that includes it, a CHECK
    // that combines it with the written column. 23505 / 23514 vs success is the answer.
    let p2: TestProxy;
    let setup: pg.Client;
    let bob2: pg.Client;
    beforeAll(async () => {
      const cfg = demoConfigObject();
      const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
      roles.support?.permissions.push({
        effect: 'deny',
        actions: ['SEE'],
        database: 'demo',
        schema: 'public',
        table: 'atk2_people',
        column: 'ssn',
      });
      setup = await owner();
      await setup.query('drop table if exists atk2_people');
      await setup.query(
        'create table atk2_people (id int primary key, name text not null, ssn text, org_id int, check (ssn is not null or org_id is not null))',
      );
      await setup.query('create unique index atk2_people_name on atk2_people (name) where ssn is not null');
      await setup.query(
        "insert into atk2_people values (1, 'Ada', '901-13-7919', 1), (2, 'Bram', null, 2), (3, 'Cleo', '903-19-3757', 3)",
      );
      p2 = await startTestProxy(cfg);
      bob2 = await p2.client('bob');
    });
    afterAll(async () => {
      await bob2.end();
      await p2.close();
      await setup.query('drop table if exists atk2_people');
      await setup.end();
    });

    test('the setup hides ssn from bob', async () => {
      const r = await outcome(bob2, 'select id, ssn from atk2_people where id = 1');
      expect(r.rows).toEqual([{ id: 1, ssn: '*****' }]);
      expect((await outcome(bob2, 'select id from atk2_people where ssn is null')).code).toBe('42501');
    });

    test('partial unique index (name) WHERE ssn IS NOT NULL: renaming a row answers "is its ssn null"', async () => {
      // Same statement, two rows: 23505 for id 3 (ssn set), success for id 2 (ssn null).
      const withSsn = await inRollback(bob2, "update atk2_people set name = 'Ada' where id = 3");
      const withoutSsn = await inRollback(bob2, "update atk2_people set name = 'Ada' where id = 2");
      expect(withSsn.code).toBe(withoutSsn.code);
      expect(withSsn.code).toBe('42501');
    });

    test('CHECK (ssn IS NOT NULL OR org_id IS NOT NULL): clearing org_id answers "is ssn null"', async () => {
      const withSsn = await inRollback(bob2, 'update atk2_people set org_id = null where id = 1');
      const withoutSsn = await inRollback(bob2, 'update atk2_people set org_id = null where id = 2');
      expect(withSsn.code).toBe(withoutSsn.code);
      expect(withSsn.code).toBe('42501');
    });
  });

  describe('EXPLAIN without ANALYZE', () => {
    test('width= is pg_statistic.avg_width of a hidden column (pg_stats itself needs MANAGE)', async () => {
      const dba = await proxy.client('dba');
      try {
        await dba.query('analyze users');
      } finally {
        await dba.end();
      }
      expect((await outcome(alice, "select avg_width from pg_stats where tablename = 'users'")).code).toBe(
        '42501',
      );
      const r = await outcome(alice, 'explain select email from users');
      // Today: "Seq Scan on users  (cost=0.00..1.15 rows=15 width=24)" — 24 is email's average width.
      const plan = JSON.stringify(r.rows);
      expect(r.code === '42501' || !/width=(?!0\b)\d+/.test(plan)).toBe(true);
    });
  });
});

describe('blocked', () => {
  const refusedForAlice: string[] = [
    'select * from (select email from users) s order by 1',
    'select distinct on (id) id, email from users order by id, email',
    'select (u.email, u.id) = (u.email, u.id) from users u',
    'select row(email) is distinct from row(null) from users',
    "select jsonb_path_query(to_jsonb(u), '$.email') from users u",
    'select to_tsvector(email) from users',
    'select pg_column_size(email) from users',
    'select octet_length(email) from users',
    'select email::char(3) from users',
    "select format('%s', email) from users",
    "select concat_ws(',', email) from users",
    'select md5(email) from users',
    'select hashtext(email) from users',
    'select * from (select id, email as name from users) a natural join (select id, name from users) b',
    'select * from (select id, email as name from users) a join (select id, name from users) b using (id, name)',
    'with recursive r(e) as (select email from users union select e from r) select * from r limit 2',
    "select email from users intersect all select 'x'",
    'select array[email] from users',
    'select (select email from users limit 1)',
    'select upper(z) from users u(a, b, z)',
    'select upper(j.c) from (users u join orgs o on o.id = u.org_id) as j(a, b, c)',
    'select upper(e) from (table users) t(a, b, e)',
    'select (select upper(email)) from users',
    "select * from users where false and email = 'x'",
    "select set_config('pgwarden.roles', 'dba', false)",
    "select * from (select set_config('pgwarden.roles', 'x', false)) s",
    "values (set_config('pgwarden.roles', 'x', false))",
  ];
  for (const sql of refusedForAlice) {
    test(`alice: ${sql}`, async () => {
      expect((await outcome(alice, sql)).code).toBe('42501');
    });
  }

  test('alice: EXECUTE parameters cannot change pgwarden.roles or search_path', async () => {
    const c = await proxy.client('alice');
    try {
      await c.query('prepare p(text) as select $1');
      expect((await outcome(c, "execute p(set_config('pgwarden.roles', 'dba', false))")).code).toBe('42501');
      expect((await outcome(c, "execute p(set_config('search_path', 'x', false))")).code).toBe('0A000');
      expect((await c.query('show pgwarden.roles')).rows).toEqual([{ 'pgwarden.roles': 'analyst' }]);
    } finally {
      await c.end();
    }
  });

  test('alice: masked, not refused, where nothing hidden is tested', async () => {
    for (const sql of [
      'select distinct on (org_id) org_id, email from users order by org_id',
      'select id, email from users limit (select count(*) from users)',
      'select * from users u, lateral (select u.email) s',
      "select * from (select email from users union all select 'x') s",
      'select t.e from (table users) t(a, b, e)',
    ]) {
      const r = await outcome(alice, sql);
      expect(r.code).toBe('ok');
      const text = JSON.stringify(r.rows);
      for (const e of EMAILS) expect(text).not.toContain(e);
    }
  });

  const refusedForBob: string[] = [
    'update users set email = ssn where id = 1',
    'update users set name = email where id = 1',
    'update users set email = email where id = 1',
    "insert into users (id, name) values (1, 'x') on conflict (id) do update set name = users.email returning name",
    'update users set org_id = org_id where id = 1 returning (select count(*) from users x where x.email = users.email)',
    'insert into orders (id, user_id, note) select 1000 + id, id, name from users where email is not null',
    "insert into orders (id, user_id, note) select 1000 + u.id, u.id, 'x' from users u join orgs o on o.secret = 'x'",
    "update users set name = 'a' where id = 1 and org_id in (select id from orgs where secret is null)",
    'merge into users u using (values (1)) s(id) on u.id = s.id when matched then update set email = u.ssn',
  ];
  for (const sql of refusedForBob) {
    test(`bob: ${sql}`, async () => {
      expect((await inRollback(bob, sql)).code).toBe('42501');
    });
  }

  test('bob: RETURNING of a written hidden column is masked', async () => {
    for (const sql of [
      "insert into users (id, name) values (1, 'x') on conflict (id) do update set email = excluded.email returning email",
      'update users set email = default where id = 1 returning email',
      'update users u set name = v.name from users v where v.id = u.id and u.id = 1 returning v.email',
      "with w as (update users set email = 'x@y' where id = 1 returning email) select * from w",
    ]) {
      const r = await inRollback(bob, sql);
      expect(r).toEqual({ code: 'ok', rows: [{ email: '*****' }] });
    }
  });

  test('alice: a schema-qualified user operator is refused (it runs user code: MANAGE)', async () => {
    expect(['0A000', '42501']).toContain((await outcome(alice, 'select 1 operator(public.+) 1')).code);
  });
});

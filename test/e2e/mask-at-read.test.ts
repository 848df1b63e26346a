// Mask at read end to end: hidden values never leave PostgreSQL, whatever relation carries their rows and whatever the analysis misses.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ddl } from '../helpers/ddl.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { ownerClient } from '../helpers/proxy-fixture.js';

let proxy: TestProxy;
let alone: TestProxy;
let owner: pg.Client;
let alice: pg.Client;
let bob: pg.Client;

const code = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: pg.DatabaseError) => e.code,
  );

beforeAll(async () => {
  owner = await ownerClient();
  await ddl(owner, 'drop schema if exists mar cascade');
  await owner.query(`
    create schema mar;
    create table mar.all_people (id int, name text, ssn text);
    create table mar.people (primary key (id)) inherits (mar.all_people);
    create table mar.vip () inherits (mar.people);
    insert into mar.people values (1, 'ann', '111-11-1111'), (2, 'ben', '222-22-2222');
    insert into mar.vip values (3, 'cat', '333-33-3333');
    create table mar.parts (id int, ssn text) partition by range (id);
    create table mar.parts_low partition of mar.parts for values from (0) to (100);
    insert into mar.parts values (5, '555-55-5555');
    create materialized view mar.people_mv as select id, ssn, upper(name) as uname from mar.people;
    create table mar.holder (id int, p mar.people);
    insert into mar.holder select id, p from mar.people p;
    create function mar.noisy() returns trigger language plpgsql as
      $$ begin raise notice 'row %', NEW; return NEW; end $$;
    create trigger noisy before insert on mar.people for each row execute function mar.noisy();
  `);
  const cfg = demoConfigObject();
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  for (const role of ['analyst', 'support']) {
    for (const table of ['people', 'parts_low']) {
      roles[role]?.permissions.push({
        effect: 'deny',
        actions: ['SEE'],
        database: 'demo',
        schema: 'mar',
        table,
        column: 'ssn',
      });
    }
  }
  proxy = await startTestProxy(cfg);
  alone = await startTestProxy(cfg, { walls: { seeChecks: false, rewrite: true } });
  alice = await proxy.client('alice');
  bob = await proxy.client('bob');
});

afterAll(async () => {
  await alice?.end();
  await bob?.end();
  await proxy?.close();
  await alone?.close();
  await ddl(owner, 'drop schema if exists mar cascade');
  await owner?.end();
});

describe('hidden follows the rows', () => {
  test('inheritance parents and children, partitioned parents, materialized views, row types', async () => {
    for (const sql of [
      'select ssn from mar.all_people',
      'select ssn from mar.people',
      'select ssn from mar.vip',
      'select ssn from mar.parts',
      'select ssn from mar.people_mv',
      'select p as ssn from mar.holder',
    ]) {
      const r = await alice.query(sql);
      expect(r.rows.length, sql).toBeGreaterThan(0);
      expect(
        r.rows.map((x) => x.ssn),
        sql,
      ).toEqual(r.rows.map(() => '*****'));
    }
    const mv = await alice.query('select uname from mar.people_mv order by id');
    expect(mv.rows.map((x) => x.uname)).toEqual(['ANN', 'BEN', 'CAT']);
  });

  test('the analysis refuses tests of such columns, and says why they are hidden', async () => {
    for (const sql of [
      "select id from mar.people_mv where ssn like '1%'",
      "select id from mar.all_people where ssn = '333-33-3333'",
      "select id from mar.parts where ssn like '5%'",
    ]) {
      const e = await alice.query(sql).then(
        () => null,
        (x: pg.DatabaseError) => x,
      );
      expect(e?.code, sql).toBe('42501');
      expect(e?.detail, sql).toMatch(/carries rows of mar\./);
    }
  });
});

describe('with the analysis SEE checks off, the rewrite alone learns nothing', () => {
  test('tests, whole rows and merges of rows run over the mask constant', async () => {
    const c = await alone.client('alice');
    try {
      const real = (await owner.query('select ssn from users where id = 1')).rows[0].ssn as string;
      expect((await c.query('select count(*)::int as n from users where ssn = $1', [real])).rows).toEqual([
        { n: 0 },
      ]);
      expect(
        (await c.query("select count(*)::int as n from users where ssn = '*****'")).rows[0].n,
      ).toBeGreaterThan(0);
      const json = await c.query('select to_json(u)::text as j from users u');
      expect(json.rows.some((r) => r.j.includes(real))).toBe(false);
      const merged = await c.query(
        'select (x).ssn from (select u as x from users u union all select u from users u) s',
      );
      expect(merged.rows.every((r) => r.ssn === '*****')).toBe(true);
      const grouped = await c.query('select email as e, count(*)::int as n from users group by 1');
      expect(grouped.rows.map((r) => r.e)).toEqual(['*****']);
      // A whole row of the masking subquery is a record, not a users row: mixing it with a typed
      // users value fails upstream (an error, never a value); cast, it carries the mask constant.
      expect(
        await code(
          c.query(
            'with recursive t(r) as (select null::users union all select u from users u, t where t.r is null) select (r).ssn from t',
          ),
        ),
      ).toBe('42804');
      const rec = await c.query(
        'with recursive t(r) as (select null::users union all select u::users from users u, t where t.r is null) select (r).ssn from t where r is not null',
      );
      expect(rec.rows.length).toBeGreaterThan(0);
      expect(rec.rows.every((r) => r.ssn === '*****')).toBe(true);
      const mvTest = await c.query("select count(*)::int as n from mar.people_mv where ssn like '1%'");
      expect(mvTest.rows).toEqual([{ n: 0 }]);
    } finally {
      await c.end();
    }
  });
});

describe('what mask at read keeps working, and what it refuses', () => {
  test('system columns of a masked relation are usable', async () => {
    const r = await alice.query(
      'select ctid, xmin, tableoid::regclass::text as t, id from users where id = 1',
    );
    expect(r.rows[0]).toMatchObject({ id: 1, t: 'users' });
    expect(String(r.rows[0].ctid)).toMatch(/^\(\d+,\d+\)$/);
  });

  test('TABLESAMPLE on a masked relation is refused with the construct named', async () => {
    const e = await alice.query('select id from users tablesample bernoulli (50)').then(
      () => null,
      (x: pg.DatabaseError) => x,
    );
    expect(e?.code).toBe('0A000');
    expect(e?.message).toMatch(/TABLESAMPLE on public\.users/);
    expect(await code(alice.query('select id from orders tablesample bernoulli (50)'))).toBe('ok');
  });

  test('RETURNING masks the hidden columns of the write target', async () => {
    await bob.query('begin');
    try {
      const r = await bob.query('update users set name = name where id = 1 returning id, email, *');
      expect(r.rows[0]).toMatchObject({ id: 1, email: '*****', ssn: '*****' });
      expect(r.fields.map((f) => f.name)).toEqual(['id', 'email', 'id', 'name', 'email', 'ssn', 'org_id']);
      expect(await code(bob.query('update users set name = name where id = 1 returning users'))).not.toBe(
        'ok',
      );
    } finally {
      await bob.query('rollback');
    }
  });

  test('row locking and WHERE CURRENT OF work through the masking subquery', async () => {
    await bob.query('begin');
    try {
      const locked = await bob.query('select id, email from users where id = 2 for update of users');
      expect(locked.rows).toEqual([{ id: 2, email: '*****' }]);
      await bob.query('declare c cursor for select id, ssn from users where id = 3 for update');
      expect((await bob.query('fetch 1 from c')).rows).toEqual([{ id: 3, ssn: '*****' }]);
      const upd = await bob.query('update users set name = name where current of c returning id');
      expect(upd.rows).toEqual([{ id: 3 }]);
    } finally {
      await bob.query('rollback');
    }
  });

  test('a trigger that prints the row it fires on: its notice reaches the caller redacted', async () => {
    const notices: string[] = [];
    bob.on('notice', (n) => notices.push(n.message ?? ''));
    await bob.query('begin');
    try {
      await bob.query("insert into mar.people (id, name, ssn) values (9, 'zed', '999-99-9999')");
    } finally {
      await bob.query('rollback');
    }
    bob.removeAllListeners('notice');
    expect(notices.length).toBe(1);
    expect(notices[0]).not.toMatch(/999/);
    expect(notices[0]).toMatch(/withholds/);
  });

  test('plans stay the same: the masking subquery is pulled up', async () => {
    for (const sql of [
      'explain (costs off) select id, name from users where id = 1',
      'explain (costs off) select o.id, u.name from orders o join users u on u.id = o.user_id',
    ]) {
      const via = (await alice.query(sql)).rows.map((r) => r['QUERY PLAN']);
      const own = (await owner.query(sql)).rows.map((r) => r['QUERY PLAN']);
      expect(via, sql).toEqual(own);
    }
  });

  test("errors speak of the caller's text: positions mapped back, generated names never shown", async () => {
    const sql = 'with x as (select id from users) select nosuch from x';
    const e = await alice.query(sql).then(
      () => null,
      (x: pg.DatabaseError) => x,
    );
    expect(e?.code).toBe('42703');
    expect(e?.message).not.toMatch(/pgw_/);
  });

  test('a caller who sees everything is sent the text byte for byte', async () => {
    const dba = await proxy.client('dba');
    try {
      const sql = 'select query from pg_stat_activity where pid = pg_backend_pid() /* from users */';
      expect((await dba.query(sql)).rows[0].query).toBe(sql);
    } finally {
      await dba.end();
    }
  });
});

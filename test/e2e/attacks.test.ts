// Attacks on hidden columns (users.email, users.ssn, orgs.secret) and on the protocol relay.
// describe('leaks'): findings — each asserts the SAFE behaviour and fails until the product is fixed.
// describe('blocked'): attacks that are correctly stopped today, kept as regression guards.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bind, execute, parse, query, sync } from '../../src/wire/frontend-encode.js';
import { cells, EMAILS, errorCodes, inRollback, outcome, SSNS } from '../helpers/outcomes.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
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

async function rawAlice(): Promise<RawClient> {
  const c = await RawClient.connect(proxy.port);
  await c.login({ user: 'alice', database: 'demo' }, 'alice');
  return c;
}

describe('leaks', () => {
  describe('a computed CTE column that is never referenced is still evaluated (error oracle)', () => {
    // Postgres drops an unreferenced output of a subquery it flattens, but a materialized CTE
    // (explicit, referenced twice, recursive, or a data-modifying one) computes its whole target
    // list. The deferred uses of that column are never replayed, so the statement is allowed and
    // 22012 vs success answers "is length(ssn) = 11" / "does ssn start with 901".
    test('WITH … AS MATERIALIZED: division by zero answers a LIKE on users.ssn', async () => {
      const hit = await outcome(
        alice,
        "with s as materialized (select id, 1/(case when ssn like '901%' then 0 else 1 end) as x from users) select id from s",
      );
      const miss = await outcome(
        alice,
        "with s as materialized (select id, 1/(case when ssn like '999%' then 0 else 1 end) as x from users) select id from s",
      );
      expect(hit.code).toBe('42501');
      expect(miss.code).toBe('42501');
    });

    test('a CTE referenced twice is materialized: length(ssn) oracle', async () => {
      const r = await outcome(
        alice,
        'with s as (select id, 1/(length(ssn)-11) as x from users) select a.id from s a, s b where a.id = b.id',
      );
      expect(r.code).toBe('42501');
    });

    test('WITH RECURSIVE base term: length(ssn) oracle', async () => {
      const r = await outcome(
        alice,
        'with recursive s(id, x) as (select id, 1/(length(ssn)-11) from users union all select id + 100, x from s where id < 0) select id from s',
      );
      expect(r.code).toBe('42501');
    });

    test('data-modifying CTE: RETURNING expression over users.ssn (bob)', async () => {
      const r = await inRollback(
        bob,
        'with w as (update users set name = name where id = 1 returning id, 1/(length(ssn)-11) as x) select id from w',
      );
      expect(r.code).toBe('42501');
    });
  });

  describe('protocol portals and SQL cursors share one namespace upstream', () => {
    test('FETCH from a protocol-level portal returns its rows unmasked', async () => {
      const c = await rawAlice();
      try {
        c.write(query('begin'));
        await c.untilReady();
        c.write(
          Buffer.concat([
            parse('s', 'select name, ssn from users order by id'),
            bind({ statement: 's', portal: 'p' }),
            sync(),
          ]),
        );
        await c.untilReady();
        c.write(query('fetch 2 from p'));
        const frames = await c.untilReady();
        const got = cells(frames);
        for (const ssn of SSNS) expect(got).not.toContain(ssn);
        // Safe: refused, or masked.
        expect(errorCodes(frames).length > 0 || got.includes('*****')).toBe(true);
      } finally {
        c.end();
      }
    });

    test('SQL EXECUTE of a protocol-level prepared statement returns its rows unmasked', async () => {
      const c = await rawAlice();
      try {
        c.write(Buffer.concat([parse('q', 'select name, ssn from users order by id limit 2'), sync()]));
        await c.untilReady();
        // The SQL-level name map does not know q: "unknown name, the server's error" — but
        // Postgres has one namespace for both, and runs q.
        c.write(query('execute q'));
        const frames = await c.untilReady();
        const got = cells(frames);
        for (const ssn of SSNS) expect(got).not.toContain(ssn);
        expect(errorCodes(frames).length > 0 || got.includes('*****')).toBe(true);
      } finally {
        c.end();
      }
    });

    test('a client-named statement "pgwarden\\u0001refused" turns the refusal probe into a Bind of it', async () => {
      const c = await rawAlice();
      try {
        c.write(query('begin'));
        await c.untilReady();
        // The probe name is an ordinary statement name to Postgres: the client claims it first.
        c.write(
          Buffer.concat([parse('pgwarden\u0001refused', 'select name, ssn from users order by id'), sync()]),
        );
        await c.untilReady();
        c.write(Buffer.concat([parse('', 'select id, name from users where id = 1'), bind({}), sync()]));
        await c.untilReady();
        // A refused Parse: the proxy's probe Bind('' ← probe name) now succeeds upstream, so the
        // client gets BindComplete instead of 42501, and the unnamed portal holds the ssn query.
        c.write(Buffer.concat([parse('', "select id from users where ssn = 'x'"), sync()]));
        const refusal = await c.untilReady();
        expect(errorCodes(refusal)).toEqual(['42501']);
        c.write(Buffer.concat([execute('', 3), sync()]));
        const frames = await c.untilReady();
        const got = cells(frames);
        for (const ssn of SSNS) expect(got).not.toContain(ssn);
      } finally {
        c.end();
      }
    });

    test('Execute of a portal name that a later DECLARE reused runs the cursor under the old plan', async () => {
      const c = await rawAlice();
      try {
        // A harmless protocol portal "c" (gone upstream at the end of its implicit transaction,
        // but remembered by the proxy with its unmasked plan) …
        c.write(
          Buffer.concat([
            parse('s', 'select id, name from users where id = 1'),
            bind({ statement: 's', portal: 'c' }),
            execute('c'),
            sync(),
          ]),
        );
        await c.untilReady();
        // … then a SQL cursor of the same name over a hidden column, run through Execute.
        c.write(query('begin; declare c cursor for select name, ssn from users order by id'));
        await c.untilReady();
        c.write(Buffer.concat([execute('c', 3), sync()]));
        const frames = await c.untilReady();
        const got = cells(frames);
        for (const ssn of SSNS) expect(got).not.toContain(ssn);
        expect(errorCodes(frames).length > 0 || got.includes('*****')).toBe(true);
      } finally {
        c.end();
      }
    });
  });

  describe('search_path tracking', () => {
    test('SET; COMMIT; <error> in one Query: the proxy reverts the SET that the COMMIT made permanent', async () => {
      const dba = await proxy.client('dba');
      await dba.query('drop schema if exists atk_sp cascade');
      await dba.query('create schema atk_sp');
      await dba.query('create table atk_sp.users (id int, name text, email text, ssn text, org_id int)');
      await dba.query("insert into atk_sp.users values (1, 'alt', 'alt@example.com', 'alt-ssn', 1)");
      const c = await proxy.client('alice');
      try {
        await c.query('set search_path = atk_sp, public');
        // Upstream: the implicit transaction is committed by COMMIT, so search_path = public
        // stays; the proxy sees the later error and reverts to atk_sp, public.
        const e = await outcome(c, 'set search_path = public; commit; select 1/0');
        expect(e.code).toBe('22012');
        const r0 = await outcome(c, 'select lower(email) as e from users where id = 1');
        expect(JSON.stringify(r0.rows)).not.toContain(EMAILS[0]);
        await c.query('set search_path = atk_sp, public');
        // The same with an explicit transaction in the string.
        expect((await outcome(c, 'begin; set search_path = public; commit; select 1/0')).code).toBe('22012');
        const r = await outcome(c, "select lower(email) as e, ssn || '' as s from users where id = 1");
        expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
        expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
      } finally {
        await c.end();
        await dba.query('drop schema atk_sp cascade');
        await dba.end();
      }
    });
  });

  describe('search_path: SQL-level PREPARE re-analyzed by Postgres under the new path', () => {
    test('PREPARE under (atk_pp, public), SET search_path = public, EXECUTE: the old decision is reused', async () => {
      const dba = await proxy.client('dba');
      await dba.query('drop schema if exists atk_pp cascade');
      await dba.query('create schema atk_pp');
      await dba.query('create table atk_pp.users (id int, name text, email text, ssn text, org_id int)');
      await dba.query("insert into atk_pp.users values (1, 'alt', 'alt@example.com', 'alt-ssn', 1)");
      const c = await proxy.client('alice');
      try {
        await c.query('set search_path = atk_pp, public');
        await c.query("prepare p as select lower(email) as e, ssn || '' as s from users order by id limit 2");
        await c.query('set search_path = public');
        // Postgres's plan cache re-analyzes p under the new search_path: public.users.
        const r = await outcome(c, 'execute p');
        expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
        expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
      } finally {
        await c.end();
        await dba.query('drop schema atk_pp cascade');
        await dba.end();
      }
    });
  });

  describe('EXPLAIN ANALYZE measures hidden values', () => {
    test('sort memory of a masked column answers its length and nullness', async () => {
      const plan = async (id: number) =>
        (
          await outcome(
            alice,
            `explain (analyze, costs off, timing off) select u.id, u.email from users u, generate_series(1, 20000) g where u.id = ${id} order by g`,
          )
        ).code;
      // Today: allowed, and "Sort Method: quicksort  Memory: 2175kB" (id 1, 21 characters) vs
      // 1706kB (id 7, NULL) vs 2331kB (id 6, 27 characters).
      expect(await plan(1)).toBe('42501');
      expect(await plan(7)).toBe('42501');
    });
  });
});

describe('blocked', () => {
  const refusedForAlice: string[] = [
    'select id from users where email is null',
    'select count(email) from users',
    'select count(*) filter (where ssn is null) from users',
    'select max(ssn) from users',
    'select row(u.*) from users u',
    'select to_jsonb(u) from users u',
    'select email from users order by 1',
    'select id, email from users order by 2',
    "select string_agg(name, ',' order by ssn) from users",
    'select (array_agg(email))[1] from users',
    'select email collate "C" from users',
    'select email::varchar(3) from users',
    'select id from (select id, 1/(length(ssn)-11) as x from users group by id, ssn) s',
  ];
  for (const sql of refusedForAlice) {
    test(`alice: ${sql}`, async () => {
      expect((await outcome(alice, sql)).code).toBe('42501');
    });
  }

  test('alice: (u).* and tablesample are masked', async () => {
    const r = await outcome(alice, 'select (u).* from users u where id = 1');
    expect(r.rows).toEqual([{ id: 1, name: 'Ada Tervo', email: '*****', ssn: '*****', org_id: 2 }]);
    const t = await outcome(alice, 'select email from users tablesample bernoulli (100)');
    expect(t.rows.every((x) => (x as { email: string }).email === '*****')).toBe(true);
    expect(JSON.stringify(t.rows)).not.toContain(EMAILS[0]);
  });

  test('alice: an unreferenced computed column of a flattened subquery is no oracle', async () => {
    // Postgres removes it (remove_unused_subquery_outputs): allowed or refused, never 22012.
    for (const shape of [
      'select id from (select id, 1/(length(ssn)-N) as x from users offset 0) s',
      'select id from (select id, 1/(length(ssn)-N) as x from users union all select 1, 1) s',
    ]) {
      const hit = await outcome(alice, shape.replace('N', '11'));
      const miss = await outcome(alice, shape.replace('N', '12'));
      expect(hit.code).not.toBe('22012');
      expect(hit.code).toBe(miss.code);
    }
  });
});

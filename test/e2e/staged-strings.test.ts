// A string that uses what it creates runs as one transaction pgwarden opens and closes: a refused statement anywhere leaves nothing of it.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
beforeAll(async () => {
  const cfg = demoConfigObject();
  // bob (support) may also run DDL here, with users.ssn and users.email still hidden from him.
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles.support?.permissions.push({ effect: 'allow', actions: ['MANAGE'], database: 'demo' });
  proxy = await startTestProxy(cfg);
});
afterAll(async () => {
  await proxy.close();
});

async function exists(name: string): Promise<boolean> {
  const c = await proxy.client('dba');
  try {
    const r = await c.query<{ r: string | null }>('select to_regclass($1)::text as r', [name]);
    return r.rows[0]?.r !== null;
  } finally {
    await c.end();
  }
}

describe('a string that uses what it creates', () => {
  test('runs whole: the table it creates takes its rows', async () => {
    const c = await proxy.client('bob');
    const r = await c.query(
      'create temp table staged_ok(id int); insert into staged_ok values (1), (2); select count(*)::int as n from staged_ok',
    );
    expect((r as unknown as { rows: { n: number }[] }[])[2]?.rows).toEqual([{ n: 2 }]);
    await c.end();
  });

  test('a refused statement after the DDL leaves nothing: the table is not there, the session is idle', async () => {
    const c = await proxy.client('bob');
    await expect(
      c.query(
        'create table staged_refused(id int); insert into staged_refused values (1); insert into staged_refused select length(ssn) from users',
      ),
    ).rejects.toMatchObject({ code: '42501' });
    expect(await exists('public.staged_refused')).toBe(false);
    const r = await c.query('select 1 as one');
    expect(r.rows).toEqual([{ one: 1 }]);
    await c.end();
  });

  test('inside a transaction block: nothing of the string stays, and the block has failed', async () => {
    const c = await proxy.client('bob');
    await c.query('begin');
    await c.query('create temp table staged_before(id int)');
    await expect(
      c.query('create table staged_in_tx(id int); insert into staged_in_tx select length(email) from users'),
    ).rejects.toMatchObject({ code: '42501' });
    await expect(c.query('select 1')).rejects.toMatchObject({ code: '25P02' });
    await c.query('rollback');
    expect(await exists('public.staged_in_tx')).toBe(false);
    await c.end();
  });

  test('the masks of a later statement apply to what it reads', async () => {
    const c = await proxy.client('bob');
    const r = (await c.query(
      'create temp table staged_m(id int); insert into staged_m values (1); select s.id, u.ssn from staged_m s join users u on u.id = s.id',
    )) as unknown as { rows: unknown[] }[];
    expect(r[2]?.rows).toEqual([{ id: 1, ssn: '*****' }]);
    await c.end();
  });

  test('a migration file in one string (BEGIN … COMMIT) runs: what it creates is used, committed at its COMMIT', async () => {
    const c = await proxy.client('bob');
    const r = (await c.query(
      "begin; create table staged_mig(id int primary key); insert into staged_mig values (1); alter table staged_mig add column v text default 'd'; select * from staged_mig; commit; insert into staged_mig values (2, 'e'); select count(*)::int as n from staged_mig",
    )) as unknown as { command: string; rows: unknown[] }[];
    expect(r.map((x) => x.command)).toEqual([
      'BEGIN',
      'CREATE',
      'INSERT',
      'ALTER',
      'SELECT',
      'COMMIT',
      'INSERT',
      'SELECT',
    ]);
    expect(r[4]?.rows).toEqual([{ id: 1, v: 'd' }]);
    expect(r[7]?.rows).toEqual([{ n: 2 }]);
    await c.query('drop table staged_mig');
    await c.end();
  });

  test("an error inside the string's own block leaves the block failed, as directly: nothing stays after ROLLBACK", async () => {
    const c = await proxy.client('bob');
    await expect(
      c.query(
        'begin; create table staged_mig_bad(id int); insert into staged_mig_bad values (1); select nope from staged_mig_bad; commit',
      ),
    ).rejects.toMatchObject({ code: '42703' });
    await expect(c.query('select 1')).rejects.toMatchObject({ code: '25P02' });
    await c.query('rollback');
    expect(await exists('public.staged_mig_bad')).toBe(false);
    await c.end();
  });

  test('an unknown name after the statements that ran: its error at its place in the string, nothing stays', async () => {
    const c = await proxy.client('bob');
    // The replies before the error are those of a direct connection (transparency corpus, "a string that controls its own transaction").
    await expect(
      c.query(
        'create table staged_unknown(id int); insert into staged_unknown values (1); select nope from staged_unknown',
      ),
    ).rejects.toMatchObject({ code: '42703', position: '84' });
    expect(await exists('public.staged_unknown')).toBe(false);
    expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    await c.end();
  });

  test('a column added earlier in the string is in a later SELECT *, as directly', async () => {
    const c = await proxy.client('bob');
    const r = (await c.query(
      'create table staged_star(id int); insert into staged_star values (1); alter table staged_star add column v int default 7; select * from staged_star; drop table staged_star',
    )) as unknown as { rows: unknown[] }[];
    expect(r[3]?.rows).toEqual([{ id: 1, v: 7 }]);
    await c.end();
  });
});

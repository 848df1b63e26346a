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
});

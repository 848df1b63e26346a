// A string that uses what it creates runs as Postgres runs a multi-statement Query: a refused statement anywhere leaves nothing Postgres would have rolled back with it.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE } from '../../src/embedded/demo.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { WireSession } from './transparency/wire-session.js';

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

/**
 * Shapes of a string that uses what it creates and controls its transaction (issue 15), each run
 * directly and through pgwarden (bob, who may run DDL): `before` puts the session in a block or a
 * failed one first, `check` reads what stayed. Postgres runs a multi-statement Query in one
 * implicit block: BEGIN turns it into an explicit one, COMMIT and ROLLBACK end it with warning
 * 25P01, SAVEPOINT, RELEASE, ROLLBACK TO and AND CHAIN fail 25P01 in it (xact.c).
 */
const SHAPES: { name: string; before?: string[]; sql: string; after?: string[]; tables: string[] }[] = [
  {
    name: 'SAVEPOINT in the implicit block',
    sql: 'create table dif_a(a int); savepoint s; insert into dif_a values (1)',
    tables: ['dif_a'],
  },
  {
    name: 'RELEASE in the implicit block',
    sql: 'create table dif_a(a int); insert into dif_a values (1); release s',
    tables: ['dif_a'],
  },
  {
    name: 'ROLLBACK TO in the implicit block',
    sql: 'create table dif_a(a int); insert into dif_a values (1); rollback to s',
    tables: ['dif_a'],
  },
  {
    name: 'COMMIT AND CHAIN in the implicit block',
    sql: 'create table dif_a(a int); insert into dif_a values (1); commit and chain',
    tables: ['dif_a'],
  },
  {
    name: 'COMMIT last, from idle',
    sql: 'create table dif_a(a int); insert into dif_a values (1); commit',
    tables: ['dif_a'],
  },
  {
    name: 'ROLLBACK mid-string',
    sql: 'create table dif_a(a int); insert into dif_a values (1); rollback; create table dif_b(a int); insert into dif_b values (2); select * from dif_b',
    tables: ['dif_a', 'dif_b'],
  },
  {
    name: 'BEGIN mid-string: the block holds what ran before it',
    sql: 'create table dif_a(a int); insert into dif_a values (1); begin; insert into dif_a values (2); select * from dif_a',
    after: ['rollback'],
    tables: ['dif_a'],
  },
  {
    name: 'COMMIT; BEGIN mid-string',
    sql: 'create table dif_a(a int); insert into dif_a values (1); commit; begin; insert into dif_a values (2); rollback; select * from dif_a',
    tables: ['dif_a'],
  },
  {
    name: 'savepoints inside the block the string opened',
    sql: 'begin; create table dif_a(a int); savepoint s1; insert into dif_a values (1); rollback to s1; insert into dif_a values (2); release s1; select * from dif_a; commit',
    tables: ['dif_a'],
  },
  {
    name: 'savepoints inside a block already open',
    before: ['begin'],
    sql: 'create table dif_a(a int); savepoint s1; insert into dif_a values (1); rollback to s1; insert into dif_a values (2); select * from dif_a',
    after: ['commit'],
    tables: ['dif_a'],
  },
  {
    name: 'COMMIT mid-string inside a block already open',
    before: ['begin'],
    sql: 'create table dif_a(a int); commit; create table dif_b(a int); insert into dif_b values (1); select * from dif_b',
    tables: ['dif_a', 'dif_b'],
  },
  {
    name: 'a failing statement after a COMMIT: what the COMMIT committed stays',
    sql: "create table dif_a(a int); insert into dif_a values (1); commit; create table dif_b(a int); insert into dif_b values (1); create table dif_b(a int); select 'never'",
    tables: ['dif_a', 'dif_b'],
  },
  {
    name: 'a failing statement before the COMMIT: nothing stays',
    sql: 'create table dif_a(a int); insert into dif_a values (1); create table dif_a(a int); commit',
    tables: ['dif_a'],
  },
  {
    name: 'a failing statement in the block the string opened',
    sql: 'create table dif_a(a int); begin; insert into dif_a values (1); create table dif_a(a int); commit',
    after: ['rollback'],
    tables: ['dif_a'],
  },
  {
    name: 'a string sent in a failed block that starts with ROLLBACK',
    before: ['begin', 'create table dif_y(a int)', 'create table dif_y(a int)'],
    sql: 'rollback; create table dif_a(a int); insert into dif_a values (1); select * from dif_a',
    tables: ['dif_a', 'dif_y'],
  },
];

describe('a string that controls its transaction: as a direct connection answers', () => {
  let direct: WireSession;
  let via: WireSession;
  beforeAll(async () => {
    const c = await proxy.client('dba');
    const r = await c.query<{ max: string }>('select max(oid::int8)::text as max from pg_class');
    await c.end();
    const above = Number(r.rows[0]?.max);
    direct = await WireSession.open(inject('pg').port, DEMO_APP_ROLE, DEMO_APP_PASSWORD, 'demo', above);
    via = await WireSession.open(proxy.port, 'bob', 'bob', 'demo', above);
  });
  afterAll(() => {
    direct?.close();
    via?.close();
  });
  const one = (w: WireSession, sql: string) => w.run({ line: 0, sql, modes: ['simple'] }, 'simple');

  for (const shape of SHAPES) {
    test(shape.name, async () => {
      const transcripts: string[][][] = [];
      for (const w of [direct, via]) {
        const t: string[][] = [];
        for (const b of shape.before ?? []) t.push(await one(w, b));
        t.push(await one(w, shape.sql));
        for (const a of shape.after ?? []) t.push(await one(w, a));
        // What stayed: each table's rows, or that it is not there.
        const names = shape.tables.map((n) => `'public.${n}'`).join(', ');
        t.push(await one(w, `select n, to_regclass(n) is not null as there from unnest(array[${names}]) n`));
        for (const n of shape.tables)
          if ((t.at(-1) ?? []).some((l) => l.startsWith(`D ["public.${n}","t"]`)))
            t.push(await one(w, `select * from ${n} order by 1`));
        await one(w, 'rollback');
        await one(w, `drop table if exists ${shape.tables.join(', ')}`);
        transcripts.push(t);
      }
      expect(transcripts[1]).toEqual(transcripts[0]);
      // The shape reached pgwarden's staging: a later statement names what an earlier one made.
      expect(transcripts[0]?.flat().some((l) => l.startsWith('E ') && l.includes('42P01'))).toBe(false);
    });
  }
});

describe('a refused statement in a string that controls its transaction', () => {
  test('after a COMMIT: what the COMMIT committed stays, nothing after it, the session is idle', async () => {
    const c = await proxy.client('bob');
    await expect(
      c.query(
        'create table ref_a(id int); insert into ref_a values (1); commit; create table ref_b(id int); insert into ref_b select length(ssn) from users',
      ),
    ).rejects.toMatchObject({ code: '42501' });
    expect(await exists('public.ref_a')).toBe(true);
    expect(await exists('public.ref_b')).toBe(false);
    expect((await c.query('select count(*)::int as n from ref_a')).rows).toEqual([{ n: 1 }]);
    await c.query('drop table ref_a');
    await c.end();
  });

  test('before the COMMIT: nothing stays', async () => {
    const c = await proxy.client('bob');
    await expect(
      c.query('create table ref_c(id int); insert into ref_c select length(ssn) from users; commit'),
    ).rejects.toMatchObject({ code: '42501' });
    expect(await exists('public.ref_c')).toBe(false);
    expect((await c.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    await c.end();
  });

  test('in the block the string opened: the block has failed, nothing stays after ROLLBACK', async () => {
    const c = await proxy.client('bob');
    await expect(
      c.query('create table ref_d(id int); begin; insert into ref_d select length(email) from users; commit'),
    ).rejects.toMatchObject({ code: '42501' });
    await expect(c.query('select 1')).rejects.toMatchObject({ code: '25P02' });
    await c.query('rollback');
    expect(await exists('public.ref_d')).toBe(false);
    await c.end();
  });

  test('after savepoints in a block already open: the block has failed, nothing stays after ROLLBACK', async () => {
    const c = await proxy.client('bob');
    await c.query('begin');
    await expect(
      c.query(
        'create table ref_e(id int); savepoint s; insert into ref_e values (1); release s; insert into ref_e select length(ssn) from users',
      ),
    ).rejects.toMatchObject({ code: '42501' });
    await expect(c.query('select 1')).rejects.toMatchObject({ code: '25P02' });
    await c.query('rollback');
    expect(await exists('public.ref_e')).toBe(false);
    await c.end();
  });
});

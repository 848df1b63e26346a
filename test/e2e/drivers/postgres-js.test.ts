// postgres.js scenario through pgwarden: type fetch at connect, prepared and simple queries, cursors, transactions, masks, 42501.
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { driverConfig } from '../../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let proxy: TestProxy;
let dba: postgres.Sql;
let alice: postgres.Sql;
beforeAll(async () => {
  proxy = await startTestProxy(driverConfig());
  dba = postgres(proxy.url('dba'), { max: 1, onnotice: () => {} });
  alice = postgres(proxy.url('alice'), { max: 1, onnotice: () => {} });
});
afterAll(async () => {
  await dba?.end();
  await alice?.end();
  await proxy?.close();
});

async function failure(p: PromiseLike<unknown>): Promise<postgres.PostgresError> {
  const e = await Promise.resolve(p).then(
    () => null,
    (err: unknown) => err,
  );
  if (!(e instanceof postgres.PostgresError)) throw new Error(`expected a PostgresError, got ${String(e)}`);
  return e;
}

describe('postgres.js', () => {
  test('SCRAM login, array types fetched at connect, introspection', async () => {
    const cols = await dba`
      select a.attname, a.atttypid::int as oid from pg_attribute a
      where a.attrelid = ${'public.orders'}::regclass and a.attnum > 0 and not a.attisdropped order by a.attnum`;
    expect(cols.map((c) => [c.attname, c.oid])).toEqual([
      ['id', 23],
      ['user_id', 23],
      ['amount', 1700],
      ['note', 25],
    ]);
    // Array parsing depends on the types postgres.js read from pg_type at connect.
    const [arr] = await dba`select array[1,2,3]::int4[] as a, array['x','y']::text[] as t`;
    expect(arr).toEqual({ a: [1, 2, 3], t: ['x', 'y'] });
  });

  test('prepared (named, reused), simple-protocol and multi-statement queries', async () => {
    for (const id of [1, 2, 3]) {
      const [u] = await dba`select id, name from users where id = ${id}`;
      expect(u?.id).toBe(id);
    }
    const simple = await dba`select count(*)::int as n from users`.simple();
    expect(simple[0]?.n).toBeGreaterThanOrEqual(12);
    const multi = await dba.unsafe('select 1 as a; select 2 as b');
    expect(multi.length).toBe(2);
  });

  test('a cursor (portal with a row limit) reads in batches', async () => {
    const seen: number[] = [];
    for await (const batch of dba`select id from orders order by id`.cursor(15)) {
      seen.push(batch.length);
    }
    expect(seen).toEqual([15, 15, 10]);
  });

  test('a transaction with an error, a savepoint, and recovery', async () => {
    await dba.unsafe(
      'drop table if exists drv_postgres_js; create table drv_postgres_js (id int primary key, v text)',
    );
    try {
      const dup = await failure(
        dba.begin(async (tx) => {
          await tx`insert into drv_postgres_js values (1, 'a')`;
          await tx`insert into drv_postgres_js values (1, 'dup')`;
        }),
      );
      expect(dup.code).toBe('23505');
      await dba.begin(async (tx) => {
        await tx`insert into drv_postgres_js values (2, 'b')`;
        const div = await failure(tx.savepoint((sp) => sp`select 1/0`));
        expect(div.code).toBe('22012');
        await tx`insert into drv_postgres_js values (3, 'c')`;
      });
      expect(await dba`select id, v from drv_postgres_js order by id`).toEqual([
        { id: 2, v: 'b' },
        { id: 3, v: 'c' },
      ]);
    } finally {
      await dba`drop table if exists drv_postgres_js`;
    }
  });

  test('alice: masked text and int4 columns decode as text', async () => {
    const rows = await alice`select id, email, org_id from users where id = ${2}`;
    expect(rows).toEqual([{ id: 2, email: '*****', org_id: '*****' }]);
    expect(rows.columns.map((c) => c.type)).toEqual([23, 25, 25]);
  });

  test('alice: a refused statement is a PostgresError with code 42501', async () => {
    const e = await failure(alice`select id from users where ssn = ${'1'}`);
    expect(e.code).toBe('42501');
    expect(e.severity).toBe('ERROR');
    expect((await alice`select 1 as one`)[0]).toEqual({ one: 1 });
  });
});

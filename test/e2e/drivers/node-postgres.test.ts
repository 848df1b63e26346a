// node-postgres (`pg`) scenario through pgwarden: introspection, simple/prepared/binary queries, transactions, masks, 42501.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { driverConfig } from '../../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let proxy: TestProxy;
let dba: pg.Client;
let alice: pg.Client;
beforeAll(async () => {
  proxy = await startTestProxy(driverConfig());
  dba = await proxy.client('dba');
  alice = await proxy.client('alice');
});
afterAll(async () => {
  await dba?.end();
  await alice?.end();
  await proxy?.close();
});

async function failure(p: Promise<unknown>): Promise<pg.DatabaseError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  if (!(e instanceof pg.DatabaseError)) throw new Error(`expected a pg.DatabaseError, got ${String(e)}`);
  return e;
}

describe(`node-postgres`, () => {
  test('SCRAM login and introspection', async () => {
    const r = await dba.query(
      "select column_name, data_type, is_nullable from information_schema.columns where table_schema = 'public' and table_name = 'users' order by ordinal_position",
    );
    expect(r.rows.map((x) => [x.column_name, x.data_type])).toEqual([
      ['id', 'integer'],
      ['name', 'text'],
      ['email', 'text'],
      ['ssn', 'text'],
      ['org_id', 'integer'],
    ]);
    const pk = await dba.query(
      "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey) where i.indrelid = 'users'::regclass and i.indisprimary",
    );
    expect(pk.rows).toEqual([{ attname: 'id' }]);
  });

  test('simple, parameterized, named prepared and binary queries', async () => {
    const simple = await dba.query('select count(*)::int as n from users; select 2 as two');
    expect(Array.isArray(simple)).toBe(true);
    const [count, two] = simple as unknown as pg.QueryResult[];
    expect(count?.rows[0].n).toBeGreaterThanOrEqual(12);
    expect(two?.rows).toEqual([{ two: 2 }]);
    for (const id of [1, 2, 3]) {
      const r = await dba.query({
        name: 'drv_user',
        text: 'select id, name from users where id = $1',
        values: [id],
      });
      expect(r.rows[0].id).toBe(id);
    }
    const bin = await dba.query({
      text: 'select id, user_id, amount from orders where id = $1',
      values: [5],
      binary: true,
    } as pg.QueryConfig);
    expect(bin.fields.map((f) => [f.name, f.dataTypeID, f.format])).toEqual([
      ['id', 23, 'binary'],
      ['user_id', 23, 'binary'],
      ['amount', 1700, 'binary'],
    ]);
    expect(bin.rows[0].id).toBe(5);
    expect(bin.rows[0].user_id).toBe(1);
  });

  test('a transaction with an error, a savepoint, and recovery', async () => {
    await dba.query(
      'drop table if exists drv_node_pg; create table drv_node_pg (id int primary key, v text)',
    );
    try {
      await dba.query('begin');
      await dba.query("insert into drv_node_pg values (1, 'a')");
      const dup = await failure(dba.query("insert into drv_node_pg values (1, 'dup')"));
      expect(dup.code).toBe('23505');
      expect((await failure(dba.query('select 1'))).code).toBe('25P02');
      await dba.query('rollback');
      await dba.query('begin');
      await dba.query("insert into drv_node_pg values (2, 'b')");
      await dba.query('savepoint s1');
      expect((await failure(dba.query('select 1/0'))).code).toBe('22012');
      await dba.query('rollback to savepoint s1');
      await dba.query("insert into drv_node_pg values (3, 'c')");
      await dba.query('commit');
      const r = await dba.query('select id, v from drv_node_pg order by id');
      expect(r.rows).toEqual([
        { id: 2, v: 'b' },
        { id: 3, v: 'c' },
      ]);
    } finally {
      await dba.query('rollback').catch(() => undefined);
      await dba.query('drop table if exists drv_node_pg');
    }
  });

  test('alice: masked text and int4 columns decode as text, text and binary results', async () => {
    const t = await alice.query('select id, email, org_id from users where id = $1', [2]);
    expect(t.rows).toEqual([{ id: 2, email: '*****', org_id: '*****' }]);
    const b = await alice.query({
      text: 'select id, email, org_id from users where id = $1',
      values: [2],
      binary: true,
    } as pg.QueryConfig);
    // Masked at read, the columns are text upstream; asked for binary, text's binary form is its bytes.
    expect(b.fields.map((f) => [f.dataTypeID, f.format])).toEqual([
      [23, 'binary'],
      [25, 'binary'],
      [25, 'binary'],
    ]);
    expect(b.rows[0].email).toBe('*****');
    expect(b.rows[0].org_id).toBe('*****');
  });

  test('alice: a refused statement is a pg.DatabaseError with code 42501', async () => {
    const e = await failure(alice.query('select id from users where ssn = $1', ['1']));
    expect(e.code).toBe('42501');
    expect(e.severity).toBe('ERROR');
    expect((await alice.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
  });
});

// Enforcement end to end (issue 5): masks, refusals, redaction, prepared statements, cursors, search_path, drivers.
import type pg from 'pg';
import postgres from 'postgres';
import { describe, expect, test } from 'vitest';
import { decodeDataRow, decodeRowDescription } from '../../src/wire/backend.js';
import { BackendCode } from '../../src/wire/codes.js';
import {
  bind,
  describe as describeMsg,
  execute,
  parse,
  query,
  sync,
} from '../../src/wire/frontend-encode.js';
import { ownerClient, useProxyFixture } from '../helpers/proxy-fixture.js';
import { errorOf, RawClient, statusOf } from '../helpers/raw-client.js';

const fx = useProxyFixture({ users: ['alice', 'bob'] });
const { users } = fx;

async function refused(c: pg.Client, sql: string): Promise<pg.DatabaseError> {
  const e = await c.query(sql).then(
    () => null,
    (err: pg.DatabaseError) => err,
  );
  if (!e) throw new Error(`not refused: ${sql}`);
  return e;
}

describe('alice (analyst): masks', () => {
  test('select * masks email and ssn, NULL cells too', async () => {
    const r = await users.alice.query('select * from users order by id');
    expect(r.rows.length).toBeGreaterThanOrEqual(12);
    for (const row of r.rows) {
      expect(row.email).toBe('*****');
      expect(row.ssn).toBe('*****');
      expect(typeof row.name).toBe('string');
      expect(row.name).not.toBe('*****');
    }
    // Users 7 and 11 have NULL email / ssn upstream: masked the same.
    expect(r.rows.find((x) => x.id === 7)?.email).toBe('*****');
    const ssnField = r.fields.find((f) => f.name === 'ssn');
    expect(ssnField?.dataTypeID).toBe(25);
  });

  test('union all passes a hidden column through: masked at its source, the visible branch as is', async () => {
    const r = await users.alice.query('select name from users union all select secret from orgs');
    const values = r.rows.map((x) => x.name);
    const names = await users.alice.query('select name from users');
    const orgs = await users.alice.query('select count(*)::int as n from orgs');
    expect(values.filter((v) => v === '*****').length).toBe(orgs.rows[0].n);
    expect(values.filter((v) => v !== '*****').sort()).toEqual(names.rows.map((x) => x.name).sort());
  });

  test('a masked int column decodes as text (node-postgres, binary requested too)', async () => {
    const c = await fx.proxy.client('alice');
    const r = await c.query({
      text: 'select id, ssn, org_id from users where id = $1',
      values: [1],
      binary: true,
    } as pg.QueryConfig);
    expect(r.rows[0].ssn).toBe('*****');
    await c.end();
  });

  test('RETURNING rows are masked (bob)', async () => {
    await users.bob.query('begin');
    const r = await users.bob.query(
      "update users set email = 'x@example.com' where id = 5 returning id, email",
    );
    expect(r.rows).toEqual([{ id: 5, email: '*****' }]);
    await users.bob.query('rollback');
  });
});

describe('alice (analyst): refusals with 42501', () => {
  const cases: [string, RegExp][] = [
    ["select id from users where email like 'a%'", /users\.email.*WHERE/],
    ['select id from users order by ssn', /users\.ssn.*ORDER BY/],
    ['select count(*) from users group by email', /users\.email.*GROUP BY/],
    ['select distinct email from users', /users\.email/],
    ['select lower(email) from users', /users\.email/],
    ['select u from users u', /users/],
    ["select ssn from users intersect all select '1'", /users\.ssn/],
    ['select id from users u where exists (select 1 from users c where c.email = u.email)', /users\.email/],
    ['select s.e from (select email as e from users) s where s.e is null', /users\.email/],
  ];
  for (const [sql, why] of cases) {
    test(sql, async () => {
      const e = await refused(users.alice, sql);
      expect(e.code).toBe('42501');
      expect(e.message).toMatch(why);
    });
  }

  test('a refusal inside a transaction fails the transaction, as Postgres would', async () => {
    const c = await fx.proxy.client('alice');
    await c.query('begin');
    await refused(c, 'select id from users order by ssn');
    const e = await refused(c, 'select 1');
    expect(e.code).toBe('25P02');
    await c.query('rollback');
    expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
    await c.end();
  });

  test('nothing of a multi-statement string runs when one statement is refused', async () => {
    const c = await fx.proxy.client('bob');
    const before = (await c.query('select count(*)::int as n from orders')).rows[0].n;
    const e = await refused(
      c,
      "insert into orders (id, user_id, amount) values (7777, 1, 1); select ssn from users where ssn = '1'",
    );
    expect(e.code).toBe('42501');
    const after = (await c.query('select count(*)::int as n from orders')).rows[0].n;
    expect(after).toBe(before);
    await c.end();
  });

  test('alice may not write', async () => {
    const e = await refused(users.alice, "update orders set note = 'x' where id = 1");
    expect(e.code).toBe('42501');
  });
});

describe('bob (support): writes and error redaction', () => {
  test('NOT NULL violation: no hidden value anywhere in the ErrorResponse', async () => {
    const e = await refused(users.bob, 'update users set name = null where id = 5');
    expect(e.code).toBe('23502');
    const all = JSON.stringify(e);
    const d = await ownerClient();
    const row = (await d.query('select email, ssn from users where id = 5')).rows[0];
    await d.end();
    expect(all).not.toContain(row.ssn);
    expect(all).not.toContain(row.email);
    expect(e.detail).toBeUndefined();
  });

  test('a data exception message becomes its condition name', async () => {
    const e = await refused(users.bob, "update users set org_id = 'abc'::int where id = 5");
    expect(e.code).toBe('22P02');
    expect(e.message).toBe('invalid_text_representation');
  });

  test('a caller who does not see everything gets data exceptions by name, whatever the table', async () => {
    // The value could come from another table than the statement names (a cascade, a trigger).
    const e = await refused(users.alice, "select 'abc'::int from orders where id = 1");
    expect(e.code).toBe('22P02');
    expect(e.message).toBe('invalid_text_representation');
    const dba = await fx.proxy.client('dba');
    const d = await refused(dba, "select 'abc'::int from orders where id = 1");
    expect(d.message).toBe('invalid input syntax for type integer: "abc"');
    await dba.end();
  });

  test('writing a hidden column is allowed', async () => {
    await users.bob.query('begin');
    const r = await users.bob.query("update users set email = 'new@example.com' where id = 5");
    expect(r.rowCount).toBe(1);
    await users.bob.query('rollback');
  });
});

describe('prepared statements, cursors, pipelines', () => {
  test('PREPARE / EXECUTE is masked', async () => {
    const c = await fx.proxy.client('alice');
    await c.query('prepare p1 as select id, ssn from users where id = $1');
    const r = await c.query('execute p1(2)');
    expect(r.rows).toEqual([{ id: 2, ssn: '*****' }]);
    await c.end();
  });

  test('DECLARE / FETCH is masked', async () => {
    const c = await fx.proxy.client('alice');
    await c.query('begin');
    await c.query('declare cur cursor for select id, email from users order by id');
    const r = await c.query('fetch 2 from cur');
    expect(r.rows).toEqual([
      { id: 1, email: '*****' },
      { id: 2, email: '*****' },
    ]);
    await c.query('commit');
    await c.end();
  });

  test('PREPARE of a refused statement is refused', async () => {
    const e = await refused(users.alice, "prepare p2 as select id from users where ssn = '1'");
    expect(e.code).toBe('42501');
  });

  test('a refused Parse in a pipeline: the harmless one after it does not run, the connection stays usable', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    await c.login({ user: 'alice', database: 'demo' }, 'alice');
    c.write(
      Buffer.concat([
        parse('', 'select 1 as a'),
        bind({}),
        execute(),
        parse('bad', "select id from users where email = 'x'"),
        parse('', 'select 2 as b'),
        bind({}),
        execute(),
        sync(),
      ]),
    );
    const frames = await c.untilReady();
    const codes = frames.map((f) => String.fromCharCode(f.code)).join('');
    // ParseComplete, BindComplete, DataRow, CommandComplete, then our ErrorResponse, then ReadyForQuery.
    expect(codes).toBe('12DCEZ');
    const err = errorOf(frames[4]!);
    expect(err.code).toBe('42501');
    expect(statusOf(frames[5]!)).toBe('I');
    c.write(Buffer.concat([query('select 3 as c')]));
    const after = await c.untilReady();
    expect(after.map((f) => String.fromCharCode(f.code)).join('')).toBe('TDCZ');
    c.end();
  });

  test('Describe of a masked column reports text, binary results requested', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    await c.login({ user: 'alice', database: 'demo' }, 'alice');
    c.write(
      Buffer.concat([
        parse('s', 'select id, ssn from users where id = 3'),
        bind({ statement: 's', resultFormats: [1] }),
        describeMsg('P'),
        execute(),
        sync(),
      ]),
    );
    const frames = await c.untilReady();
    const rd = frames.find((f) => f.code === BackendCode.RowDescription)!;
    const fields = decodeRowDescription(rd.payload);
    // Masked at read, the column is text upstream: its binary form is the text's bytes.
    expect(fields[1]).toMatchObject({ name: 'ssn', typeOid: 25, typeSize: -1, typeModifier: -1, format: 1 });
    expect(fields[0]).toMatchObject({ name: 'id', typeOid: 23, format: 1 });
    const row = decodeDataRow(frames.find((f) => f.code === BackendCode.DataRow)!.payload);
    expect(row[1]?.toString()).toBe('*****');
    expect(row[0]?.readInt32BE(0)).toBe(3);
    c.end();
  });

  test('postgres.js (pipelined named statements) decodes masked columns as text', async () => {
    const sql = postgres(fx.proxy.url('alice'), { max: 1, prepare: true, onnotice: () => {} });
    try {
      const rows = await sql`select id, ssn, org_id from users where id = ${4}`;
      expect(rows[0]).toEqual({ id: 4, ssn: '*****', org_id: expect.any(Number) });
      const again = await sql`select id, ssn, org_id from users where id = ${5}`;
      expect(again[0]?.ssn).toBe('*****');
      const e = await sql`select id from users where ssn = ${'x'}`.then(
        () => null,
        (err: { code: string }) => err,
      );
      expect(e?.code).toBe('42501');
      const ok = await sql`select 1 as one`;
      expect(ok[0]?.one).toBe(1);
    } finally {
      await sql.end();
    }
  });
});

describe('search_path and the catalog', () => {
  test('set search_path to a schema with its own users table resolves to it; a statement prepared before runs what was decided', async () => {
    const dba = await fx.proxy.client('dba');
    await dba.query('create schema alt');
    await dba.query('create table alt.users (id int, email text)');
    await dba.query("insert into alt.users values (1, 'alt@example.com')");
    const c = await fx.proxy.client('alice');
    try {
      await c.query({ name: 'q', text: 'select email from users where id = $1', values: [1] });
      await c.query('set search_path to alt, public');
      // alt.users.email is not hidden from alice (only public.users.email is): it comes back unmasked.
      const r = await c.query('select email from users where id = 1');
      expect(r.rows).toEqual([{ email: 'alt@example.com' }]);
      // Mask at read: the statement was prepared upstream with public.users qualified and masked.
      const p = await c.query({ name: 'q', text: 'select email from users where id = $1', values: [1] });
      expect(p.rows).toEqual([{ email: '*****' }]);
      await c.query('reset search_path');
      const back = await c.query({ name: 'q', text: 'select email from users where id = $1', values: [1] });
      expect(back.rows).toEqual([{ email: '*****' }]);
      await c.query('begin');
      await c.query('set local search_path to alt');
      expect((await c.query('select email from users where id = 1')).rows).toEqual([
        { email: 'alt@example.com' },
      ]);
      await c.query('commit');
      expect((await c.query('select email from users where id = 1')).rows).toEqual([{ email: '*****' }]);
    } finally {
      await c.end();
      await dba.query('drop schema alt cascade');
      await dba.end();
    }
  });

  test("a table created behind the proxy's back and shadowing on the search path: what was decided, then right", async () => {
    const d = await ownerClient();
    await d.query('create schema if not exists shadow');
    await d.query('create table if not exists shadow.users (id int, email text)');
    await d.query("insert into shadow.users values (1, 'shadow@example.com')");
    const c = await fx.proxy.client('alice');
    try {
      await c.query('select 1');
      await c.query('set search_path to shadow, public');
      const first = await c.query('select email from users where id = 1').then(
        (r) => r.rows,
        (e: pg.DatabaseError) => e.code,
      );
      // A stale catalog resolves public.users, and mask at read sends it qualified: Postgres runs
      // exactly that (masked), never shadow.users unchecked. A fresh one resolves shadow.users.
      expect([
        JSON.stringify([{ email: '*****' }]),
        JSON.stringify([{ email: 'shadow@example.com' }]),
      ]).toContain(JSON.stringify(first));
      // DDL through pgwarden reads the catalog again: from then on the shadowing table is seen.
      const dba = await fx.proxy.client('dba');
      await dba.query("comment on schema shadow is 'shadows public.users'");
      await dba.end();
      const second = await c.query('select email from users where id = 1');
      expect(second.rows).toEqual([{ email: 'shadow@example.com' }]);
    } finally {
      await c.end();
      await d.query('drop schema shadow cascade');
      await d.end();
    }
  });

  test("a column added behind the proxy's back is never returned unmasked", async () => {
    const c = await fx.proxy.client('alice');
    await c.query('select * from orgs');
    const d = await ownerClient();
    await d.query('alter table orgs add column pin text');
    await d.query("update orgs set pin = 'pin-' || id");
    try {
      const first = await c.query('select * from orgs').then(
        (r) => r,
        (e: pg.DatabaseError) => e,
      );
      if (first instanceof Error) {
        expect((first as pg.DatabaseError).code).toBe('42501');
      } else {
        // Mask at read names the columns pgwarden knows: until the catalog is read again (TTL,
        // DDL through pgwarden) the new column is left out; once read, it is analyzed like any other.
        expect([3, 4]).toContain(first.fields.length);
        expect(first.rows.every((r) => r.secret === '*****')).toBe(true);
      }
      const second = await c.query('select * from orgs');
      expect(second.rows.every((r) => r.secret === '*****')).toBe(true);
      expect(second.rows.every((r) => !('pin' in r) || String(r.pin).startsWith('pin-'))).toBe(true);
    } finally {
      await d.query('alter table orgs drop column pin');
      await d.end();
      await c.end();
    }
  });

  test('FunctionCall is refused', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    await c.login({ user: 'alice', database: 'demo' }, 'alice');
    // FunctionCall: Int32 function OID (1115 = now? any), Int16 0 formats, Int16 0 args, Int16 result format.
    const fc = Buffer.from([0x46, 0, 0, 0, 14, 0, 0, 0x04, 0x5b, 0, 0, 0, 0, 0, 0]);
    c.write(fc);
    const frames = await c.untilReady();
    expect(errorOf(frames[0]!).code).toBe('42501');
    c.end();
  });
});

// node-postgres through pgwarden against the real embedded PostgreSQL: queries, errors, NOTIFY, cancel, large results.
import crypto from 'node:crypto';
import net from 'node:net';
import pg from 'pg';
import { serialize } from 'pg-protocol';
import { describe, expect, test } from 'vitest';
import { useProxyFixture } from '../helpers/proxy-fixture.js';
import { untilRunningUpstream } from '../helpers/upstream-activity.js';

const fx = useProxyFixture();

describe('node-postgres through pgwarden', () => {
  test('simple query as alice returns the demo rows', async () => {
    const c = await fx.proxy.client('alice');
    const r = await c.query('select count(*)::int as n from users');
    expect(r.rows[0].n).toBeGreaterThanOrEqual(12);
    await c.end();
  });

  test('extended protocol with parameters, and named prepared statements reused', async () => {
    const c = await fx.proxy.client('dba');
    const r = await c.query('select name from users where id = $1', [3]);
    expect(r.rows).toEqual([{ name: 'Cleo Zeller' }]);
    for (const id of [1, 2, 4]) {
      const p = await c.query({
        name: 'user_by_id',
        text: 'select id, name from users where id = $1',
        values: [id],
      });
      expect(p.rows[0].id).toBe(id);
    }
    const typed = await c.query('select $1::numeric(10,2) + 1 as v, $2::date as d', ['41.50', '2026-01-02']);
    expect(typed.rows[0].v).toBe('42.50');
    await c.end();
  });

  test('an error inside a transaction, then recovery', async () => {
    const c = await fx.proxy.client('dba');
    await c.query('begin');
    await expect(c.query('select 1/0')).rejects.toMatchObject({ code: '22012' });
    await expect(c.query('select 1')).rejects.toMatchObject({ code: '25P02' });
    await c.query('rollback');
    const r = await c.query('select 2 as two');
    expect(r.rows[0].two).toBe(2);
    await expect(c.query('selec 1')).rejects.toMatchObject({ code: '42601' });
    expect((await c.query('select 3 as three')).rows[0].three).toBe(3);
    await c.end();
  });

  test('LISTEN/NOTIFY between two clients', async () => {
    const a = await fx.proxy.client('dba');
    const b = await fx.proxy.client('dba');
    await a.query('listen pgw_channel');
    const got = new Promise<pg.Notification>((resolve) => a.on('notification', resolve));
    await b.query("notify pgw_channel, 'hello'");
    const n = await got;
    expect(n.channel).toBe('pgw_channel');
    expect(n.payload).toBe('hello');
    await a.end();
    await b.end();
  });

  test('CancelRequest with our BackendKeyData cancels a running pg_sleep(30)', async () => {
    const c = await fx.proxy.client('dba');
    const key = c as unknown as { processID: number; secretKey: number };
    expect(key.processID).toBeGreaterThan(0);
    const q = c.query('select pg_sleep(30.0101)');
    q.catch(() => {});
    // Cancel once the statement runs upstream (a cancel sent before it arrives cancels nothing).
    await untilRunningUpstream('pg_sleep(30.0101)');
    const started = Date.now();
    await new Promise<void>((resolve) => {
      const s = net.connect(fx.proxy.port, '127.0.0.1', () =>
        s.end(serialize.cancel(key.processID, key.secretKey)),
      );
      s.on('close', () => resolve());
    });
    await expect(q).rejects.toMatchObject({ code: '57014' });
    // Far sooner than the statement's 30 s (a loaded machine may take seconds; bench/ measures the latency).
    expect(Date.now() - started).toBeLessThan(15_000);
    // The session goes on after the cancel.
    expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
    await c.end();
  });

  test('a wrong key cancels nothing', async () => {
    const c = await fx.proxy.client('dba');
    const key = c as unknown as { processID: number; secretKey: number };
    const q = c.query('select pg_sleep(0.5) as slept');
    await new Promise<void>((resolve) => {
      const s = net.connect(fx.proxy.port, '127.0.0.1', () =>
        s.end(serialize.cancel(key.processID, key.secretKey ^ 1)),
      );
      s.on('close', () => resolve());
    });
    expect((await q).rows).toHaveLength(1);
    await c.end();
  });

  test('a 100k-row result arrives whole', async () => {
    const c = await fx.proxy.client('dba');
    const r = await c.query('select g, md5(g::text) as h, g * 2 as d from generate_series(1, 100000) g');
    expect(r.rowCount).toBe(100000);
    expect(r.rows[99999]).toEqual({
      g: 100000,
      h: crypto.createHash('md5').update('100000').digest('hex'),
      d: 200000,
    });
    expect(r.rows[0].h).toBe('c4ca4238a0b923820dcc509a6f75849b');
    const sum = r.rows.reduce((s: number, row: { g: number }) => s + row.g, 0);
    expect(sum).toBe((100000 * 100001) / 2);
    await c.end();
  });

  test('a wrong password and an unknown user get the same 28P01', async () => {
    const wrong = new pg.Client({ connectionString: fx.proxy.url('alice', 'not-alice') });
    const unknown = new pg.Client({ connectionString: fx.proxy.url('mallory', 'x') });
    const e1 = await wrong.connect().then(
      () => null,
      (e: pg.DatabaseError) => e,
    );
    const e2 = await unknown.connect().then(
      () => null,
      (e: pg.DatabaseError) => e,
    );
    expect(e1?.code).toBe('28P01');
    expect(e2?.code).toBe('28P01');
    expect(e1?.message).toBe('password authentication failed for user "alice"');
    expect(e2?.message).toBe('password authentication failed for user "mallory"');
  });

  test('an unknown database is 3D000 after authentication', async () => {
    const c = new pg.Client({ connectionString: fx.proxy.url('dba', 'dba', 'nope') });
    await expect(c.connect()).rejects.toMatchObject({ code: '3D000' });
  });

  test('writes go through and are visible (rolled back)', async () => {
    const c = await fx.proxy.client('dba');
    await c.query('begin');
    const r = await c.query(
      "insert into orders (id, user_id, amount, note) values (9001, 1, 12.50, 'x') returning id",
    );
    expect(r.rows[0].id).toBe(9001);
    expect(r.command).toBe('INSERT');
    await c.query('rollback');
    const after = await c.query('select count(*)::int as n from orders where id = 9001');
    expect(after.rows[0].n).toBe(0);
    await c.end();
  });
});

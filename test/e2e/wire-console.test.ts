// The wire admin console (`-d pgwarden`) with node-postgres: SHOW as an admin and without audit_read, KILL (57P01), errors that keep the session, extended protocol refused.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { wireConsole } from '../../src/admin/wire-console.js';
import { consoleConfig, startConsoleProxy } from '../helpers/console-proxy.js';
import { SHOW_CLIENTS_COLUMNS } from '../helpers/pgbouncer-columns.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
let reloads: () => number;
const consoles: pg.Client[] = [];

async function consoleAs(user: string): Promise<pg.Client> {
  const c = await proxy.client(user, user, 'pgwarden');
  consoles.push(c);
  return c;
}

beforeAll(async () => {
  ({ proxy, reloads } = await startConsoleProxy());
}, 60_000);

afterAll(async () => {
  for (const c of consoles) await c.end().catch(() => undefined);
  await proxy?.close();
});

describe('wire admin console', () => {
  test('SHOW CLIENTS as a workspace admin: PgBouncer column names, every logged-in session', async () => {
    const alice = await proxy.client('alice');
    try {
      const dba = await consoleAs('dba');
      const r = await dba.query('SHOW CLIENTS');
      expect(r.fields.map((f) => f.name)).toEqual(SHOW_CLIENTS_COLUMNS);
      const mine = r.rows.find((x) => x.user === 'alice');
      expect(mine).toMatchObject({
        type: 'C',
        database: 'demo',
        state: 'idle',
        addr: '127.0.0.1',
        roles: 'analyst',
      });
      expect(r.rows.find((x) => x.user === 'dba')).toMatchObject({ database: 'pgwarden', link: null });
      const servers = await dba.query('SHOW SERVERS');
      const pid = (await alice.query('select pg_backend_pid() as pid')).rows[0].pid as number;
      expect(servers.rows.find((x) => x.link === mine.id)).toMatchObject({
        type: 'S',
        user: expect.stringMatching(/^(pgwarden_app|pgwarden_set_[0-9a-f]+)$/),
        database: 'demo',
        remote_pid: String(pid),
      });
      const stats = await dba.query('SHOW STATS');
      expect(stats.fields.map((f) => f.name)).toEqual([
        'database',
        'total_xact_count',
        'total_query_count',
        'total_received',
        'total_sent',
        'total_query_time',
        'total_refused_count',
      ]);
      const demo = stats.rows.find((x) => x.database === 'demo');
      expect(Number(demo.total_query_count)).toBeGreaterThanOrEqual(1);
      expect(Number(demo.total_received)).toBeGreaterThan(0);
      const policy = await dba.query('SHOW POLICY');
      expect(policy.rows[0]).toMatchObject({
        epoch: proxy.server.epoch(),
        source: 'file',
        databases: 'demo',
      });
      expect((await dba.query('show version;')).rows[0].version).toMatch(/^pgwarden \d+\.\d+\.\d+$/);
    } finally {
      await alice.end();
    }
  });

  test('a caller without audit_read gets 42501 naming it, and the session goes on', async () => {
    const alice = await consoleAs('alice');
    await expect(alice.query('SHOW CLIENTS')).rejects.toMatchObject({
      code: '42501',
      message: 'permission denied: SHOW CLIENTS needs the app-level action audit_read',
    });
    const notices: string[] = [];
    alice.on('notice', (n) => notices.push(`${n.message}\n${(n as { detail?: string }).detail}`));
    await alice.query('SHOW HELP');
    expect(notices[0]).toContain('KILL <client id>');
    const bob = await consoleAs('bob');
    expect((await bob.query('SHOW STATS')).rows.length).toBeGreaterThanOrEqual(1);
    await expect(bob.query('KILL 1')).rejects.toMatchObject({
      code: '42501',
      message: 'permission denied: KILL needs the app-level action workspace_settings',
    });
    await expect(bob.query('RELOAD')).rejects.toMatchObject({ code: '42501' });
    await expect(bob.query('SHUTDOWN')).rejects.toMatchObject({ code: '42501' });
    expect((await bob.query('SHOW VERSION')).rows).toHaveLength(1);
  });

  test('anything else is a Postgres error and the session goes on; the extended protocol is refused', async () => {
    const dba = await consoleAs('dba');
    await expect(dba.query('SELECT 1')).rejects.toMatchObject({
      code: '42601',
      message: 'syntax error at or near "SELECT"',
      position: '1',
    });
    await expect(dba.query('SHOW FOO')).rejects.toMatchObject({ code: '0A000' });
    await expect(dba.query('KILL abc')).rejects.toMatchObject({ code: '42601', position: '6' });
    await expect(dba.query('SHOW CLIENTS; SHOW STATS')).rejects.toMatchObject({ code: '42601' });
    await expect(dba.query('KILL 999999')).rejects.toMatchObject({ code: '42704' });
    await expect(dba.query('SHOW CLIENTS', [1])).rejects.toMatchObject({ code: '0A000' });
    expect((await dba.query('')).rows).toEqual([]);
    expect((await dba.query('show clients')).rows.length).toBeGreaterThanOrEqual(1);
    await dba.query('RELOAD');
    expect(reloads()).toBe(1);
  });

  test('KILL closes the named session with FATAL 57P01 admin_shutdown', async () => {
    const alice = await proxy.client('alice');
    const ended = new Promise<{ code?: string; message: string }>((resolve) =>
      alice.on('error', (e) => resolve(e as { code?: string; message: string })),
    );
    await alice.query('begin');
    await alice.query('select 1');
    const dba = await consoleAs('dba');
    const id = (await dba.query('SHOW CLIENTS')).rows.find(
      (x) => x.user === 'alice' && x.database === 'demo',
    ).id;
    expect((await dba.query(`KILL ${id}`)).command).toBe('KILL');
    const e = await ended;
    expect(e).toMatchObject({
      code: '57P01',
      message: 'terminating connection due to administrator command',
    });
    expect((await dba.query('SHOW CLIENTS')).rows.find((x) => x.id === id)).toBeUndefined();
  });

  test('KILL of a session running a statement: its only answer is FATAL 57P01 saying the statement was canceled', async () => {
    // pg_sleep needs MANAGE: the victim is a dba session on the demo database.
    const victim = await proxy.client('dba');
    const errors: { code?: string }[] = [];
    victim.on('error', (e) => errors.push(e as { code?: string }));
    // Long enough that a loaded machine's KILL still finds it running (the KILL ends it at once).
    const running = victim.query('select pg_sleep(60)').catch((e: unknown) => e);
    const dba = await consoleAs('dba');
    let id: string | undefined;
    for (let i = 0; i < 400 && id === undefined; i++) {
      const rows = (await dba.query('SHOW CLIENTS')).rows;
      id = rows.find((x) => x.database === 'demo' && x.state === 'active')?.id;
      if (id === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    expect((await dba.query(`KILL ${id}`)).command).toBe('KILL');
    expect(await running).toMatchObject({
      severity: 'FATAL',
      code: '57P01',
      message: 'terminating connection due to administrator command',
      detail: 'The statement running at shutdown was canceled and had no effect.',
    });
    expect(errors.filter((e) => e.code === '57014')).toEqual([]);
  });

  test('a viewer is not allowed on the console; a wrong password is 28P01 as anywhere', async () => {
    const c = new pg.Client({
      connectionString: proxy.url('dba', 'dba', 'pgwarden'),
      options: '-c pgwarden.viewer=alice',
    });
    await expect(c.connect()).rejects.toMatchObject({ code: '28000' });
    await expect(proxy.client('dba', 'wrong', 'pgwarden')).rejects.toMatchObject({ code: '28P01' });
  });

  test('SHUTDOWN stops the instance gracefully', async () => {
    const other = await startTestProxy(consoleConfig(), { proxy: { console: wireConsole } });
    const dba = await other.client('dba', 'dba', 'pgwarden');
    const ended = new Promise<{ code?: string }>((resolve) =>
      dba.on('error', (e) => resolve(e as { code?: string })),
    );
    expect((await dba.query('SHUTDOWN')).command).toBe('SHUTDOWN');
    expect(await ended).toMatchObject({ code: '57P01' });
    await expect(other.client('alice')).rejects.toThrow();
    await dba.end().catch(() => undefined);
  });
});

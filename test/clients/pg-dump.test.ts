// pg_dump 15 as dba through pgwarden: schema and data, byte for byte what a direct dump prints; a restore of it round-trips.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  appClient,
  appUrl,
  driverConfig,
  dropDatabase,
  freshDatabase,
  requireTool,
} from '../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { psql } from '../helpers/psql.js';
import { run } from '../helpers/run-program.js';

const DB = 'pgw_drivers_dump';
const RESTORED = 'pgw_drivers_restored';

let proxy: TestProxy;
let version = '';
beforeAll(async () => {
  version = requireTool('pg_dump 15', ['pg_dump', '--version'], 'postgresql-client-15');
  await freshDatabase(DB, true);
  const app = await appClient(DB);
  await app.query(`
    create type mood as enum ('sad', 'ok', 'happy');
    create sequence ticket_seq start 100;
    create table tickets (id int primary key default nextval('ticket_seq'), mood mood, tags text[], doc jsonb, at timestamptz, raw bytea);
    insert into tickets (mood, tags, doc, at, raw) values
      ('ok', '{a,b}', '{"k": [1, 2]}', '2024-01-02 03:04:05+00', '\\x00ff'),
      ('happy', null, null, null, null);
    create view big_orders as select * from orders where amount > 500;
    create index orders_user_idx on orders (user_id);
    comment on column users.ssn is 'tax id';`);
  await app.end();
  await freshDatabase(RESTORED, false);
  proxy = await startTestProxy(driverConfig([DB, RESTORED]));
});
afterAll(async () => {
  await proxy?.close();
  await dropDatabase(DB);
  await dropDatabase(RESTORED);
});

describe('pg_dump 15', () => {
  test('is installed', () => {
    expect(version).toMatch(/pg_dump \(PostgreSQL\) 15\./);
  });

  for (const [what, flags] of [
    ['schema and data', []],
    ['schema only', ['--schema-only']],
    ['data only, as INSERTs', ['--data-only', '--inserts']],
  ] as const) {
    test(`${what}: the same bytes as a direct dump`, async () => {
      const [via, direct] = await Promise.all([
        run('pg_dump', ['--no-sync', ...flags, proxy.url('dba', 'dba', DB)]),
        run('pg_dump', ['--no-sync', ...flags, appUrl(DB)]),
      ]);
      expect(via.stderr).toBe('');
      expect(via.code).toBe(0);
      // pg_dump 15.14+ brackets a dump with \restrict / \unrestrict <random key> (CVE-2025-8714):
      // the key differs on every run, so those two lines are compared by shape only.
      const key = /^\\(un)?restrict [A-Za-z0-9]+$/gm;
      expect(via.stdout.match(key)?.length).toBe(direct.stdout.match(key)?.length);
      expect(via.stdout.replace(key, '\\$1restrict KEY')).toBe(
        direct.stdout.replace(key, '\\$1restrict KEY'),
      );
      expect(via.stdout).toContain('PostgreSQL database dump complete');
    });
  }

  test("alice (no MANAGE): pg_dump stops at its first session setting with pgwarden's permission error", async () => {
    // pg_dump prints no SQLSTATE; the 42501 text is pgwarden's "permission denied … needs MANAGE".
    const r = await run('pg_dump', ['--no-sync', '--schema-only', proxy.url('alice')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^pg_dump: error: query failed: ERROR: {2}permission denied for database demo: .* needs MANAGE/,
    );
  });

  test('a dump restores through pgwarden (psql as dba) and the data round-trips', async () => {
    // Dumped directly, so that this checks the restore path on its own.
    const dump = await run('pg_dump', ['--no-sync', '--no-owner', appUrl(DB)]);
    expect(dump.code).toBe(0);
    const restore = await psql(
      proxy.url('dba', 'dba', RESTORED),
      ['-q', '-v', 'ON_ERROR_STOP=1'],
      dump.stdout,
      30_000,
    );
    expect(restore.stderr).toBe('');
    expect(restore.code).toBe(0);
    const q =
      "select (select count(*) from orders), (select sum(amount) from orders), (select string_agg(ssn, ',' order by id) from users), (select string_agg(doc::text || mood, ';' order by id) from tickets)";
    const a = await psql(appUrl(DB), ['-tA', '-c', q]);
    const b = await psql(appUrl(RESTORED), ['-tA', '-c', q]);
    expect(b.stdout).toBe(a.stdout);
  });
});

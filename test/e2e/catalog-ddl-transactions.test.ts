// Issue 15/16: DDL inside a transaction never waits on itself, other sessions are not stalled, refreshes are incremental, catalog failures are 57P03/58000.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

const server = inject('pg');
const DB = 'catalog_ddl';
const APP = { user: 'pgwarden_app', password: 'pgwarden-app-demo' };

function direct(database = DB, who: { user: string; password: string } = APP): Promise<pg.Client> {
  const c = new pg.Client({ host: server.host, port: server.port, database, ...who });
  return c.connect().then(() => c);
}

/** Resolves to the milliseconds `p` took, or rejects when it takes longer than `ms`. */
async function timed<T>(p: Promise<T>, ms = 10_000): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const value = await Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
  return { value, ms: performance.now() - t0 };
}

let proxy: TestProxy;
const lines: Record<string, unknown>[] = [];

/**
 * Waits (at most 30 s, a statement every 200 ms to drive the reads past their backoff) until the
 * shared catalog of DB has been read since its last failure: its last catalog-failed line, if any,
 * is followed by a catalog-recovered one.
 */
async function sharedCatalogRecovered(c: pg.Client): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    expect((await c.query('SELECT name FROM orgs')).rows).toEqual([{ name: 'Acme' }]);
    const last = lines
      .filter((l) => l.database === DB && (l.event === 'catalog-failed' || l.event === 'catalog-recovered'))
      .at(-1);
    if (last === undefined || last.event === 'catalog-recovered') return;
    if (Date.now() > deadline)
      throw new Error('the shared catalog was not read again within 30 s of its last failure');
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  const admin = await direct('postgres', { user: server.superuser, password: server.superuserPassword });
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DB} OWNER pgwarden_app`);
  await admin.end();
  const app = await direct();
  await app.query(`
    CREATE TABLE orgs (id int PRIMARY KEY, name text NOT NULL);
    CREATE TABLE users (id int PRIMARY KEY, name text NOT NULL, email text, ssn text, org_id int REFERENCES orgs);
    CREATE VIEW user_contacts AS SELECT id, name, email FROM users;
    INSERT INTO orgs VALUES (1, 'Acme');
    INSERT INTO users VALUES (1, 'Ada', 'ada@example.com', '123-45-6789', 1);
  `);
  await app.end();
  const cfg = demoConfigObject();
  const demo = (cfg.databases as Record<string, { url: string }>).demo as { url: string };
  cfg.databases = { ...(cfg.databases as object), [DB]: { url: demo.url.replace(/\/demo$/, `/${DB}`) } };
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles.analyst?.permissions.push(
    { effect: 'allow', actions: ['SELECT', 'SEE'], database: DB },
    { effect: 'deny', actions: ['SEE'], database: DB, schema: 'public', table: 'users', column: 'ssn' },
  );
  proxy = await startTestProxy(cfg, { logLines: lines });
});
afterAll(async () => {
  await proxy.close();
});

describe('DDL in a transaction through pgwarden (issue 15)', () => {
  it('BEGIN; ALTER TABLE on a table a view reads; SELECT 1 answers at once, and the transaction sees its own change', async () => {
    const c = await proxy.client('dba', 'dba', DB);
    try {
      await c.query('BEGIN');
      await c.query('ALTER TABLE users ADD COLUMN x int');
      const one = await timed(c.query('SELECT 1 AS one'));
      expect(one.value.rows).toEqual([{ one: 1 }]);
      // The transaction's own column and the view over the altered table, read in-band.
      expect((await timed(c.query('SELECT x FROM users'))).value.rows).toEqual([{ x: null }]);
      expect((await timed(c.query('SELECT name FROM user_contacts'))).value.rows).toEqual([{ name: 'Ada' }]);
      await c.query('ROLLBACK');
      // Rolled back: the column is gone again, for this session and in the shared catalog.
      await expect(c.query('SELECT x FROM users')).rejects.toMatchObject({ code: '42703' });
      console.log(`SELECT 1 after ALTER TABLE in a transaction: ${one.ms.toFixed(1)} ms`);
    } finally {
      await c.end();
    }
  });

  it('other sessions are not stalled while a migration holds its locks, and see its work once it commits', async () => {
    const mig = await proxy.client('dba', 'dba', DB);
    const other = await proxy.client('alice', 'alice', DB);
    const third = await proxy.client('dba', 'dba', DB);
    try {
      await other.query('SELECT name FROM orgs');
      await mig.query('BEGIN');
      await mig.query('ALTER TABLE users ADD COLUMN y int');
      await mig.query('CREATE TABLE mig_new (id int PRIMARY KEY, note text)');
      // Another session's statements that do not touch the locked table answer at once …
      const orgs = await timed(other.query('SELECT name FROM orgs'));
      expect(orgs.value.rows).toEqual([{ name: 'Acme' }]);
      // … also right after a third session's DDL made the shared catalog be read again (that
      // read must not wait for the view whose table the migration holds locked).
      await third.query('CREATE TABLE side (k int)');
      const side = await timed(third.query('SELECT k FROM side'));
      const again = await timed(other.query('SELECT id, name FROM orgs'));
      expect(side.value.rows).toEqual([]);
      expect(again.value.rows).toEqual([{ id: 1, name: 'Acme' }]);
      // The migration goes on: parameterized (extended protocol) inserts into what it created.
      await timed(mig.query('INSERT INTO mig_new VALUES ($1, $2)', [1, 'one']));
      await timed(mig.query('CREATE VIEW mig_view AS SELECT id, y FROM users'));
      expect((await timed(mig.query('SELECT id, y FROM mig_view'))).value.rows).toEqual([{ id: 1, y: null }]);
      // Uncommitted: the other session does not see the new table.
      await expect(other.query('SELECT id FROM mig_new')).rejects.toMatchObject({ code: '42P01' });
      await mig.query('COMMIT');
      const seen = await timed(other.query('SELECT id, note FROM mig_new'));
      expect(seen.value.rows).toEqual([{ id: 1, note: 'one' }]);
      expect((await other.query('SELECT y FROM users')).rows).toEqual([{ y: null }]);
      console.log(
        `other session during a migration: ${orgs.ms.toFixed(1)} ms, after a concurrent DDL ${again.ms.toFixed(1)} ms; ` +
          `the DDL session's next statement ${side.ms.toFixed(1)} ms; after the commit ${seen.ms.toFixed(1)} ms`,
      );
      // A statement held by the migration's locks waits until its COMMIT (forever here): any bound far
      // below that tells the two apart, and a loaded machine needs seconds of slack.
      expect(Math.max(orgs.ms, again.ms, side.ms)).toBeLessThan(8000);
    } finally {
      await mig.query('ROLLBACK').catch(() => undefined);
      await Promise.all([mig.end(), other.end(), third.end()]);
    }
  });

  it('ROLLBACK TO SAVEPOINT undoes DDL for the analysis too', async () => {
    const c = await proxy.client('dba', 'dba', DB);
    try {
      await c.query('BEGIN');
      await c.query('SAVEPOINT s');
      await c.query('CREATE TABLE sp_t (a int)');
      expect((await c.query('SELECT a FROM sp_t')).rows).toEqual([]);
      await c.query('ROLLBACK TO SAVEPOINT s');
      await expect(c.query('SELECT a FROM sp_t')).rejects.toMatchObject({ code: '42P01' });
      await c.query('ROLLBACK');
    } finally {
      await c.end();
    }
  });

  it('the statement after a CREATE TABLE costs little more than direct (timings logged)', async () => {
    const via = await proxy.client('dba', 'dba', DB);
    const dir = await direct();
    const run = async (c: pg.Client, i: number, who: string) => {
      await c.query(`CREATE TABLE ct_${who}_${i} (id int PRIMARY KEY, v text)`);
      const t0 = performance.now();
      await c.query(`SELECT id, v FROM ct_${who}_${i}`);
      return performance.now() - t0;
    };
    try {
      const times = { proxy: [] as number[], direct: [] as number[] };
      for (let i = 0; i < 7; i++) {
        times.direct.push(await run(dir, i, 'd'));
        times.proxy.push(await run(via, i, 'p'));
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[3] as number;
      console.log(
        `statement after CREATE TABLE: direct median ${median(times.direct).toFixed(1)} ms, ` +
          `through pgwarden ${median(times.proxy).toFixed(1)} ms`,
      );
      // A bound that holds on a loaded CI machine; the ≤ 20 ms target is measured by bench/.
      expect(median(times.proxy)).toBeLessThan(1000);
    } finally {
      await Promise.all([via.end(), dir.end()]);
    }
  });
});

describe('catalog failures (issue 16)', () => {
  it('a failed shared refresh does not fail statements the session can analyze; none is 08006', async () => {
    const admin = await direct('postgres', { user: server.superuser, password: server.superuserPassword });
    const c = await proxy.client('dba', 'dba', DB);
    try {
      await c.query('SELECT 1');
      // No new connection to the database, and the catalog connection is gone: the shared refresh fails.
      await admin.query(`ALTER DATABASE ${DB} CONNECTION LIMIT 0`);
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${DB}' AND application_name = 'pgwarden catalog'`,
      );
      await c.query('CREATE TABLE after_failure (k int)');
      // The session reads the catalog on its own connection instead.
      const r = await timed(c.query('SELECT k FROM after_failure'));
      expect(r.value.rows).toEqual([]);
      expect((await timed(c.query('SELECT name FROM orgs'))).value.rows).toEqual([{ name: 'Acme' }]);
      const failed = lines.filter((l) => l.event === 'catalog-failed');
      expect(failed.length).toBe(1);
      expect(JSON.stringify(lines)).not.toContain('"08006"');
      // Connections allowed again, the shared catalog is read again with the change it missed
      // while the session goes on reading in-band (a read started only by statements that call
      // the shared read, which in-band readers never do, left it failed for good).
      await admin.query(`ALTER DATABASE ${DB} CONNECTION LIMIT -1`);
      await sharedCatalogRecovered(c);
      expect(lines.filter((l) => l.event === 'catalog-recovered' && l.database === DB).length).toBe(1);
    } finally {
      await admin.query(`ALTER DATABASE ${DB} CONNECTION LIMIT -1`);
      await admin.end();
      await c.end();
    }
  });
});

describe('a refresh that an unknown name asks for, while the catalog is locked (issue 16)', () => {
  it('fails only the statement that names the unknown table; statements on known tables go on', async () => {
    const admin = await direct(DB, { user: server.superuser, password: server.superuserPassword });
    const c = await proxy.client('alice', 'alice', DB);
    try {
      // Warm: the session's upstream backend has orgs in its own relation cache.
      expect((await c.query('SELECT name FROM orgs')).rows).toEqual([{ name: 'Acme' }]);
      // Any change an earlier session of this file made known (its transaction ending late, or the
      // CREATE TABLE of the failed-refresh test above) is read into the shared catalog first: a
      // known change must never be served from the last catalog, so one pending under the lock
      // below would rightly fail the statements on orgs too. A statement alone does not ensure
      // it: while the shared read is in its failure backoff the session reads in-band, for itself.
      await sharedCatalogRecovered(c);
      const app = await direct();
      await app.query('CREATE TABLE made_upstream (k int)');
      await app.end();
      // Past the once-a-second limit on refreshes for unknown names.
      await new Promise((r) => setTimeout(r, 1100));
      // Nothing is known to have changed since (made_upstream was made behind pgwarden's back).
      expect((await c.query('SELECT name FROM orgs')).rows).toEqual([{ name: 'Acme' }]);
      // Another transaction holds pg_attribute: every catalog read (shared or in-band) times out on its lock.
      await admin.query('BEGIN');
      await admin.query('LOCK TABLE pg_catalog.pg_attribute IN ACCESS EXCLUSIVE MODE');
      // 58000 when the read timed out on the lock; 57P03 when, on a loaded machine, the catalog
      // connection could not even be opened meanwhile (the test server's connection slots are shared).
      const refused = await c.query('SELECT k FROM made_upstream').then(
        () => undefined,
        (e: { code?: string }) => e.code,
      );
      expect(['58000', '57P03']).toContain(refused);
      // Postgres answers these at once; the failed refresh found no change to orgs.
      for (let i = 0; i < 3; i++) {
        const r = await timed(c.query('SELECT name FROM orgs'), 3000);
        expect(r.value.rows).toEqual([{ name: 'Acme' }]);
      }
      await admin.query('ROLLBACK');
      // The lock gone, the table is read once the failed reads' backoff has run out (100 ms
      // doubling to 5 s: on a loaded machine the lock was held through several failed reads, so it
      // may be past 1 s). Until then the statement is refused as above, never answered otherwise.
      const deadline = Date.now() + 30_000;
      for (;;) {
        await new Promise((r) => setTimeout(r, 1100));
        const got = await c.query('SELECT k FROM made_upstream').then(
          (r) => ({ rows: r.rows as unknown[] }),
          (e: { code?: string }) => ({ code: e.code }),
        );
        if ('rows' in got) {
          expect(got.rows).toEqual([]);
          break;
        }
        expect(['58000', '57P03']).toContain(got.code);
        if (Date.now() > deadline)
          throw new Error(`made_upstream still not read 30 s after the lock: ${got.code}`);
      }
    } finally {
      await admin.query('ROLLBACK').catch(() => undefined);
      await admin.end();
      await c.end();
    }
  });
});

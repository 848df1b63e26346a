// Shutdown after the grace period: running statements are canceled, open transactions rolled back, and each client told so (issue 16 item 1).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { demoConfigObject, startTestProxy } from '../../helpers/proxy.js';
import { ownerClient } from '../../helpers/proxy-fixture.js';
import { untilRunningUpstream } from '../../helpers/upstream-activity.js';

const TABLE = 'shutdown_probe';
let direct: pg.Client;

beforeAll(async () => {
  // As the demo tables' owner: under roles: managed every proxy's start checks that its
  // administration login can grant on every table, which a superuser's table would fail.
  direct = await ownerClient();
  await direct.query(`DROP TABLE IF EXISTS ${TABLE}; CREATE TABLE ${TABLE} (who text)`);
});
afterAll(async () => {
  await direct.query(`DROP TABLE IF EXISTS ${TABLE}`);
  await direct.end();
});

/** A dba client whose errors (the FATAL at shutdown) are collected, not thrown. */
async function client(port: number): Promise<{ c: pg.Client; errors: pg.DatabaseError[] }> {
  const c = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${port}/demo` });
  const errors: pg.DatabaseError[] = [];
  c.on('error', (e) => errors.push(e as pg.DatabaseError));
  await c.connect();
  return { c, errors };
}

/** Waits (at most 10 s) for the FATAL to reach a client: its socket may be read after close() resolved. */
async function fatalOf(x: { errors: pg.DatabaseError[] }): Promise<pg.DatabaseError | undefined> {
  const end = Date.now() + 10_000;
  while (x.errors.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return x.errors[0];
}

async function rows(): Promise<string[]> {
  return (await direct.query<{ who: string }>(`SELECT who FROM ${TABLE} ORDER BY who`)).rows.map(
    (r) => r.who,
  );
}

describe('shutdown with statements still running at the end of the grace period', () => {
  test('each running write is canceled, no open transaction commits, and the FATAL 57P01 says so', async () => {
    const cfg = demoConfigObject();
    cfg.limits = { auth_failure_delay_ms: 10, shutdown_grace_ms: 2000, shutdown_cancel_wait_ms: 3000 };
    const proxy = await startTestProxy(cfg);
    const auto = await client(proxy.port);
    const inTx = await client(proxy.port);
    const idleTx = await client(proxy.port);
    const quick = await client(proxy.port);
    // An autocommit write that would commit at 8 s, long after the grace period.
    const autoRun = auto.c
      .query(`INSERT INTO ${TABLE} SELECT 'auto' FROM pg_sleep(8.0808)`)
      .catch((e: unknown) => e);
    await inTx.c.query('BEGIN');
    await inTx.c.query(`INSERT INTO ${TABLE} VALUES ('in-tx')`);
    const inTxRun = inTx.c.query('SELECT pg_sleep(8.0808)').catch((e: unknown) => e);
    await idleTx.c.query('BEGIN');
    await idleTx.c.query(`INSERT INTO ${TABLE} VALUES ('idle-tx')`);
    let quickDone = false;
    const quickRun = quick.c
      .query(`INSERT INTO ${TABLE} SELECT 'quick' FROM pg_sleep(0.2022)`)
      .finally(() => {
        quickDone = true;
      });
    // Shut down once the statements run upstream (one still on its way would leave its session idle);
    // the quick one may have ended by then: it only has to have started.
    await untilRunningUpstream('pg_sleep(8.0808)', 2);
    await untilRunningUpstream('pg_sleep(0.2022)', 1, 20_000, () => quickDone);
    const started = Date.now();
    await proxy.server.close();
    const took = Date.now() - started;

    // The statement that finished within the grace period committed; nothing else did, ever.
    await quickRun;
    // As Postgres at a fast shutdown: the running statement's only answer is the FATAL 57P01 (no
    // ERROR 57014 of pgwarden's cancel before it), its DETAIL the statement's fate.
    expect((await autoRun) as pg.DatabaseError).toMatchObject({
      severity: 'FATAL',
      code: '57P01',
      message: 'terminating connection due to administrator command',
      detail: 'The statement running at shutdown was canceled and had no effect.',
    });
    expect((await inTxRun) as pg.DatabaseError).toMatchObject({
      severity: 'FATAL',
      code: '57P01',
      detail:
        'The statement running at shutdown was canceled and had no effect. The open transaction was rolled back.',
    });
    expect(auto.errors.concat(inTx.errors).filter((e) => e.code === '57014')).toEqual([]);
    expect(await fatalOf(idleTx)).toMatchObject({
      code: '57P01',
      detail: 'The open transaction was rolled back.',
    });
    // Grace, then the cancel's answer: well before the statements would have ended (with slack for a loaded machine).
    expect(took).toBeLessThan(7500);
    await new Promise((r) => setTimeout(r, Math.max(0, 8500 - (Date.now() - started))));
    expect(await rows()).toEqual(['quick']);
    // No upstream backend of these sessions is left.
    const left = await direct.query(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'pgwarden_app' AND query LIKE '%pg_sleep(8.0808)%' AND pid <> pg_backend_pid()",
    );
    expect(left.rows[0].n).toBe(0);
  }, 30_000);

  test('a statement that does not answer the cancel in time has its upstream backend terminated', async () => {
    await direct.query(`TRUNCATE ${TABLE}`);
    const cfg = demoConfigObject();
    cfg.limits = { auth_failure_delay_ms: 10, shutdown_grace_ms: 300, shutdown_cancel_wait_ms: 0 };
    const proxy = await startTestProxy(cfg);
    const auto = await client(proxy.port);
    const run = auto.c
      .query(`INSERT INTO ${TABLE} SELECT 'killed' FROM pg_sleep(5.0505)`)
      .catch((e: unknown) => e);
    await untilRunningUpstream('pg_sleep(5.0505)');
    await proxy.server.close();
    // The cancel usually loses the race against a zero wait (the backend is terminated), but may win:
    // either way the FATAL says the statement had no effect, and it had none.
    const result = await run;
    const fatal =
      (result as pg.DatabaseError).code === '57P01' ? (result as pg.DatabaseError) : await fatalOf(auto);
    expect(fatal?.code).toBe('57P01');
    expect(fatal?.detail).toMatch(
      /^The statement running at shutdown (did not answer a cancel request; its upstream session was terminated, so it had no effect\. Any open transaction was rolled back with it|was canceled and had no effect)\.$/,
    );
    await new Promise((r) => setTimeout(r, 5500));
    expect(await rows()).toEqual([]);
  }, 30_000);
});

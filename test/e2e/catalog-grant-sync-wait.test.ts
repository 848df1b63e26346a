// Issue 15: after DDL under roles: managed, the url login's next statement does not wait for the grant sync (its DDL does, also a prepared one at Execute, never racing the sync's GRANTs); a set login's statement naming the new table waits for it, then runs; the sync never waits long on a client's lock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Catalog } from '../../src/catalog/types.js';
import { decodeCommandComplete } from '../../src/wire/backend.js';
import { BackendCode } from '../../src/wire/codes.js';
import { bind, execute, parse, query, sync } from '../../src/wire/frontend-encode.js';
import { superuserClient } from '../helpers/drivers/tools.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { RawClient, statusOf } from '../helpers/raw-client.js';

let proxy: TestProxy;
const table = `t15_after_ddl_${process.pid}`;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  proxy = await startTestProxy(demoConfigObject(), { logLines, logLevel: 'debug' });
});
afterAll(async () => {
  const c = await proxy.client('dba');
  for (const t of [table, `${table}_x`, `${table}_x2`, `${table}_lock`])
    await c.query(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
  await c.end();
  await proxy.close();
});

/** Waits until `pred` holds, checking every 20 ms, at most `ms` (then throws `what`). */
async function until(pred: () => boolean, what: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Replaces the grant sync with one held until `release` (each call is recorded in `calls`). */
function holdSyncs(): { calls: string[]; release: () => void; restore: () => void } {
  const managed = proxy.server.managed;
  const real = managed.sync.bind(managed);
  let release = () => {};
  const held = new Promise<void>((r) => {
    release = r;
  });
  const calls: string[] = [];
  managed.sync = async (database: string, catalog?: Catalog) => {
    calls.push(database);
    await held;
    return real(database, catalog);
  };
  return {
    calls,
    release: () => release(),
    restore: () => {
      release();
      managed.sync = real;
    },
  };
}

/** Holds the grant syncs (holdSyncs), runs `ddl` as `dba` and waits for the sync after it to be called; the caller restores. */
async function createWhileSyncHeld(
  dba: { query(sql: string): Promise<unknown> },
  ddl: string,
): Promise<ReturnType<typeof holdSyncs>> {
  const hold = holdSyncs();
  try {
    const before = hold.calls.length;
    await dba.query(ddl);
    await until(() => hold.calls.length > before, 'the grant sync after the DDL');
    return hold;
  } catch (e) {
    hold.restore();
    throw e;
  }
}

describe('the catalog after DDL under roles: managed', () => {
  it("is handed to MANAGE sessions before the grant sync; a set login's statement waits for the sync", async () => {
    const managed = proxy.server.managed;
    const sync = managed.sync.bind(managed);
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const syncs: string[] = [];
    managed.sync = async (database: string, catalog?: Catalog) => {
      syncs.push(database);
      await held;
      return sync(database, catalog);
    };
    const dba = await proxy.client('dba');
    const alice = await proxy.client('alice');
    try {
      await dba.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
      // The statements after it run on the new catalog while its grant sync is held.
      await dba.query(`INSERT INTO ${table} VALUES (1, 'a')`);
      expect((await dba.query(`SELECT id, v FROM ${table}`)).rows).toEqual([{ id: 1, v: 'a' }]);
      expect(syncs).toContain('demo');
      // alice (a set login) names the new table: she waits for the grants instead of a 42501.
      let answered = false;
      const pending = alice.query(`SELECT id, v FROM ${table}`).finally(() => {
        answered = true;
      });
      await new Promise((r) => setTimeout(r, 500));
      expect(answered).toBe(false);
      release();
      expect((await pending).rows).toEqual([{ id: 1, v: 'a' }]);
    } finally {
      release();
      managed.sync = sync;
      await Promise.all([dba.end(), alice.end()]);
    }
  });
});

describe('a set login while the grant sync after DDL elsewhere runs', () => {
  it('reads a table the DDL did not touch at once; its read of the new table waits for the grants', async () => {
    const t = `${table}_new`;
    const dba = await proxy.client('dba');
    const alice = await proxy.client('alice');
    await alice.query('select 1 from orgs limit 1');
    // The rule needs a successful sync of alice's login on the catalog of before (a failed one,
    // say on a lock another test file's role DDL held, makes every set login wait, as it must):
    // sync in full until one succeeds, before the syncs are held.
    const state = () =>
      (proxy.server.managed as unknown as { dbs: Map<string, { failure?: string }> }).dbs.get('demo');
    for (let i = 0; ; i++) {
      await proxy.server.managed.syncInFull('demo');
      if (state() && state()?.failure === undefined) break;
      if (i >= 20) throw new Error(`the grant sync kept failing: ${state()?.failure}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const hold = await createWhileSyncHeld(dba, `CREATE TABLE ${t} (id int PRIMARY KEY, v text)`);
    try {
      // The sync is held: a read that waited for it would not answer before the release below
      // (bounded, so that a read that waits fails this test alone, never holding the syncs).
      const orgs = await Promise.race([
        alice.query('SELECT id, name FROM orgs ORDER BY id LIMIT 1'),
        new Promise<never>((_, reject) =>
          setTimeout(() => {
            hold.restore();
            reject(new Error('the read of an untouched table waited for the held grant sync'));
          }, 30_000),
        ),
      ]);
      expect(orgs.rows.length).toBe(1);
      // Joins and built-in functions of tables the DDL did not touch, the same.
      const joined = await alice.query(
        'SELECT count(*)::int AS n FROM orgs o JOIN users u ON u.org_id = o.id WHERE lower(o.name) <> $1',
        ['x'],
      );
      expect(joined.rows[0].n).toBeGreaterThan(0);
      // The new table: without its grants Postgres would answer 42501; it waits for them instead.
      const pending = alice.query(`SELECT id, v FROM ${t}`);
      hold.release();
      expect((await pending).rows).toEqual([]);
    } finally {
      hold.restore();
      await dba.query(`DROP TABLE IF EXISTS ${t}`).catch(() => undefined);
      await Promise.all([dba.end(), alice.end()]);
    }
  });
});

describe('DDL of a url login and the grant sync, serialized', () => {
  it('CREATE, INSERT, ALTER, DROP of one table in a row, 40 times, while a set login is known: never "tuple concurrently updated"', {
    timeout: 180_000,
  }, async () => {
    const dba = await proxy.client('dba');
    // alice's set login exists: every sync grants her SELECT on the table the DDL just made.
    const alice = await proxy.client('alice');
    await alice.query('select 1 from orgs limit 1');
    const errors: string[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const t = `${table}_s${i % 3}`;
        for (const sql of [
          `CREATE TABLE ${t} (id int PRIMARY KEY, v text)`,
          `INSERT INTO ${t} VALUES (1, 'a')`,
          `ALTER TABLE ${t} ADD COLUMN w int`,
          `CREATE INDEX ON ${t} (v)`,
          `DROP TABLE ${t}`,
        ])
          await dba.query(sql).catch((e: Error) => errors.push(`${sql}: ${e.message}`));
      }
    } finally {
      await Promise.all([dba.end(), alice.end()]);
    }
    expect(errors).toEqual([]);
  });
});

describe('a prepared DDL statement and the grant sync', () => {
  it('Execute of a portal bound before a sync began waits for that sync, then runs', async () => {
    const t = `${table}_x`;
    const dba = await proxy.client('dba');
    const raw = await RawClient.connect(proxy.port);
    const hold = holdSyncs();
    try {
      await dba.query(`CREATE TABLE ${t} (id int)`);
      await raw.login({ user: 'dba', database: 'demo' }, 'dba');
      // Inside a transaction block the portal outlives Sync: bound now, executed later.
      raw.write(query('BEGIN'));
      await raw.untilReady();
      raw.write(
        Buffer.concat([
          parse('c15', `COMMENT ON TABLE ${t} IS 'two'`),
          bind({ portal: 'p15', statement: 'c15' }),
          sync(),
        ]),
      );
      const bound = await raw.untilReady();
      expect(bound.map((f) => f.code)).toEqual([
        BackendCode.ParseComplete,
        BackendCode.BindComplete,
        BackendCode.ReadyForQuery,
      ]);
      // Another session's DDL: the catalog read after it starts a grant sync, held here.
      const before = hold.calls.length;
      await dba.query(`CREATE TABLE ${t}2 (id int)`);
      await until(() => hold.calls.length > before, 'the grant sync after CREATE TABLE');
      const from = logLines.length;
      raw.write(Buffer.concat([execute('p15'), sync()]));
      await until(
        () => logLines.slice(from).some((l) => l.event === 'manage-wait'),
        'the Execute to wait for the grant sync',
      );
      hold.release();
      const ran = await raw.untilReady(30_000);
      const done = ran.find((f) => f.code === BackendCode.CommandComplete);
      expect(done && decodeCommandComplete(done.payload)).toBe('COMMENT');
      expect(statusOf(ran[ran.length - 1] as (typeof ran)[number])).toBe('T');
      raw.write(query('COMMIT'));
      await raw.untilReady();
      const r = await dba.query(`SELECT obj_description('${t}'::regclass, 'pg_class') AS d`);
      expect(r.rows).toEqual([{ d: 'two' }]);
    } finally {
      hold.restore();
      raw.end();
      await dba.end();
    }
  });
});

describe('the grant sync and a lock a client holds', () => {
  it("fails with 55P03 after the roles lock timeout instead of waiting for the client's transaction, and syncs once it ends", async () => {
    const t = `${table}_lock`;
    const direct = await superuserClient('demo');
    const dba = await proxy.client('dba');
    // alice's set login exists: the sync after CREATE TABLE grants her SELECT on the new table.
    const alice = await proxy.client('alice');
    await alice.query('select 1 from orgs limit 1');
    const hold = await createWhileSyncHeld(dba, `CREATE TABLE ${t} (id int)`);
    try {
      // A transaction behind pgwarden's back changes the table's pg_class row and its column's
      // pg_attribute row and stays open: the sync's GRANT on the table or the column (its ACL is
      // in those rows) would wait for it to end.
      await direct.query('BEGIN');
      await direct.query(`ALTER TABLE ${t} ADD COLUMN z int, ALTER COLUMN id SET STATISTICS 100`);
      const from = logLines.length;
      hold.restore();
      await until(
        () => logLines.slice(from).some((l) => l.event === 'grant-sync-failed'),
        'the grant sync to fail on the lock',
      );
      const failed = logLines.slice(from).find((l) => l.event === 'grant-sync-failed');
      expect(String(failed?.err)).toContain('lock timeout');
      await direct.query('ROLLBACK');
      await proxy.server.managed.sync('demo');
      expect(proxy.server.managed.failureOf('demo')).toBeUndefined();
      expect((await alice.query(`SELECT id FROM ${t}`)).rows).toEqual([]);
    } finally {
      hold.restore();
      await direct.query('ROLLBACK').catch(() => undefined);
      await Promise.all([direct.end(), dba.end(), alice.end()]);
    }
  });
});

// Issue 15: after DDL under roles: managed, the url login's next statement does not wait for the grant sync (its DDL does, never racing the sync's GRANTs); a set login's statement naming the new table waits for it, then runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Catalog } from '../../src/catalog/types.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
const table = `t15_after_ddl_${process.pid}`;

beforeAll(async () => {
  proxy = await startTestProxy(demoConfigObject());
});
afterAll(async () => {
  const c = await proxy.client('dba');
  await c.query(`DROP TABLE IF EXISTS ${table}`).finally(() => c.end());
  await proxy.close();
});

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

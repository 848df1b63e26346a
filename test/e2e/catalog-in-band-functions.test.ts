// Issue 15: the catalog read on a session's own connection (DDL in a transaction) calls pg_catalog's functions, never one of a schema the session put before pg_catalog on its path (temporary tables named like catalog relations: attacks/in-band-catalog-shadows.test.ts).
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { ownerClient } from '../helpers/proxy-fixture.js';

let proxy: TestProxy;
const tag = `t15_shadow_${process.pid}`;

beforeAll(async () => {
  proxy = await startTestProxy();
  const c = await ownerClient();
  try {
    // A schema of this suite's own (other suites share the database): a function that would
    // answer every "was this row written since?" of the change search with false.
    await c.query(`DROP SCHEMA IF EXISTS ${tag} CASCADE; CREATE SCHEMA ${tag};
      CREATE FUNCTION ${tag}.pg_visible_in_snapshot(xid8, pg_snapshot) RETURNS boolean
        LANGUAGE sql IMMUTABLE AS 'SELECT true'`);
  } finally {
    await c.end();
  }
});
afterAll(async () => {
  await proxy?.close();
  const c = await ownerClient();
  await c.query(`DROP SCHEMA IF EXISTS ${tag} CASCADE`).finally(() => c.end());
});

/** BEGIN, CREATE TABLE, INSERT, and the SELECT that needs the in-band read; ROLLBACK. Returns the SELECT's rows. */
async function createAndRead(c: pg.Client, table: string): Promise<unknown[]> {
  await c.query('BEGIN');
  try {
    await c.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
    await c.query(`INSERT INTO ${table} VALUES (1, 'a')`);
    return (await c.query(`SELECT id, v FROM ${table}`)).rows;
  } finally {
    await c.query('ROLLBACK');
  }
}

describe("the in-band catalog read cannot be misled by the session's search_path", () => {
  it('a function of a schema put before pg_catalog does not answer for the built-in one', async () => {
    const dba = await proxy.client('dba');
    try {
      await dba.query(`SET search_path = ${tag}, pg_catalog, public`);
      expect(await createAndRead(dba, `${tag}_c`)).toEqual([{ id: 1, v: 'a' }]);
      expect((await dba.query('SHOW search_path')).rows).toEqual([
        { search_path: `${tag}, pg_catalog, public` },
      ]);
    } finally {
      await dba.end();
    }
  });
});

// Issue 15: after DDL in a transaction, transaction control (SAVEPOINT, RELEASE, COMMIT, ROLLBACK) is decided without a catalog read on the session's own connection; a statement that names a relation still reads it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
const lines: Record<string, unknown>[] = [];
const table = `t15_control_${process.pid}`;

beforeAll(async () => {
  proxy = await startTestProxy(undefined, { logLines: lines, logLevel: 'debug' });
});
afterAll(async () => {
  await proxy?.close();
});

/** How many in-band catalog reads the proxy logged so far (each is logged before its statement goes upstream). */
const inBandReads = () => lines.filter((l) => l.event === 'in-band-catalog-read').length;

describe('transaction control after DDL in a transaction', () => {
  it('reads no catalog in-band; the SELECT of the new table does', async () => {
    const c = await proxy.client('dba');
    try {
      await c.query('BEGIN');
      await c.query(`CREATE TABLE ${table} (id int PRIMARY KEY, v text)`);
      const before = inBandReads();
      await c.query('SAVEPOINT s1');
      await c.query('RELEASE SAVEPOINT s1');
      await c.query('SAVEPOINT s2');
      await c.query('ROLLBACK TO SAVEPOINT s2');
      expect(inBandReads()).toBe(before);
      // The new table is read on the session's connection, once.
      expect((await c.query(`SELECT id, v FROM ${table}`)).rows).toEqual([]);
      expect(inBandReads()).toBe(before + 1);
      await c.query(`ALTER TABLE ${table} ADD COLUMN w int`);
      const altered = inBandReads();
      await c.query('COMMIT');
      expect(inBandReads()).toBe(altered);
      // Committed: the shared catalog has the table and its new column.
      expect((await c.query(`SELECT id, v, w FROM ${table}`)).rows).toEqual([]);
      await c.query(`DROP TABLE ${table}`);
      await c.query('BEGIN');
      await c.query(`CREATE TABLE ${table} (id int)`);
      const made = inBandReads();
      await c.query('ROLLBACK');
      expect(inBandReads()).toBe(made);
      // Rolled back: gone for the analysis too.
      await expect(c.query(`SELECT id FROM ${table}`)).rejects.toMatchObject({ code: '42P01' });
    } finally {
      await c.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
      await c.end();
    }
  });
});

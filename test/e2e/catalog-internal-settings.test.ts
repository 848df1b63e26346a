// Issue 15: after pgwarden read the catalog on a session's own connection, SHOW and current_setting of pgwarden_catalog.* answer as a direct connection does (42704, NULL with missing_ok): the read leaves no setting behind.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
const table = `t15_internal_${process.pid}`;
beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy?.close();
});

const failure = (c: pg.Client, sql: string) =>
  c.query(sql).then(
    () => undefined,
    (e: pg.DatabaseError) => ({ code: e.code, message: e.message, position: e.position }),
  );

describe('pgwarden_catalog.* after an in-band catalog read', () => {
  test('SHOW and current_setting answer as on a direct connection', async () => {
    const { host, port, superuser, superuserPassword } = inject('pg');
    const direct = new pg.Client({
      host,
      port,
      user: superuser,
      password: superuserPassword,
      database: 'demo',
    });
    await direct.connect();
    const dba = await proxy.client('dba');
    try {
      // DDL in a transaction: the next statement is analyzed with an incremental catalog read on
      // dba's own connection (twice: after CREATE, after ALTER).
      await dba.query('BEGIN');
      await dba.query(`CREATE TABLE ${table} (id int)`);
      expect((await dba.query(`SELECT id FROM ${table}`)).rows).toEqual([]);
      await dba.query(`ALTER TABLE ${table} ADD COLUMN v text`);
      expect((await dba.query(`SELECT id, v FROM ${table}`)).rows).toEqual([]);
      const missingOk = async () => {
        for (const name of ['reread', 'types_changed', 'functions_changed', 'system_user_code']) {
          const sql = `SELECT current_setting('pgwarden_catalog.${name}', true) AS v`;
          expect((await direct.query(sql)).rows, sql).toEqual([{ v: null }]);
          expect((await dba.query(sql)).rows, sql).toEqual([{ v: null }]);
        }
      };
      // Inside the transaction (missing_ok: no error to end it), and after it.
      await missingOk();
      await dba.query('ROLLBACK');
      await missingOk();
      for (const sql of [
        'SHOW pgwarden_catalog.reread',
        'SHOW pgwarden_catalog.types_changed',
        "SELECT current_setting('pgwarden_catalog.reread')",
      ]) {
        const want = await failure(direct, sql);
        expect(want?.code, sql).toBe('42704');
        expect(await failure(dba, sql), sql).toEqual(want);
      }
      // The session goes on.
      expect((await dba.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await Promise.all([direct.end(), dba.end()]);
    }
  });
});

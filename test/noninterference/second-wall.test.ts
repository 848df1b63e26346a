// The third wall alone (PostgreSQL's privileges): with the SEE checks and mask at read off, roles: managed lets no hidden value out.
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { setWallSwitchesForTests } from '../../src/policy/wall-switches.js';
import { dbName } from './databases.js';
import { writeArb } from './generator.js';
import { Harness, report, type Stmt } from './harness.js';
import { knownStatements } from './sources.js';

const PREFIX = 'niw';
let harness: Harness;
let restore: () => void;
beforeAll(async () => {
  // Both other walls off: the analysis's SEE checks and mask at read (the text goes up as written).
  restore = setWallSwitchesForTests({ seeChecks: false, rewrite: false });
  harness = await Harness.start(inject('pg'), PREFIX, { roles: 'managed' });
});
afterAll(async () => {
  await harness?.close();
  restore?.();
});

async function asAlice<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({
    host: '127.0.0.1',
    port: harness.proxy.address.port,
    user: 'alice',
    password: 'alice',
    database: dbName(PREFIX, 'a'),
  });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

describe('the second wall stands alone: SEE checks off, roles: managed', () => {
  test('a statement reading a hidden column fails upstream with 42501', async () => {
    for (const sql of [
      'select email from users',
      'select * from users',
      "select count(*) from users where ssn like '9%'",
      'select id from users order by email limit 1',
      'select secret from orgs',
      'select ssn_last4 from user_secrets',
      'select code from badges',
      'select u from users u',
      'with x as (select ssn from users) select count(*) from x',
    ]) {
      const e = await asAlice((c) => c.query(sql)).then(
        () => undefined,
        (err: pg.DatabaseError) => err,
      );
      expect(e?.code, sql).toBe('42501');
      expect(e?.message, sql).toBe(
        'permission denied: the privileges pgwarden grants your roles in PostgreSQL do not allow this statement',
      );
      expect(e?.detail, sql).toMatch(
        /^PostgreSQL refused it: permission denied for table (users|orgs|user_secrets|badges)$/,
      );
    }
  });

  test('nothing else changes: visible columns read as before', async () => {
    const r = await asAlice((c) => c.query('select id, name from users order by id limit 2'));
    expect(r.rows).toEqual([
      { id: 1, name: 'Ada Tervo' },
      { id: 2, name: 'Bram Wendt' },
    ]);
  });

  test('the noninterference corpus reports 0 leaks for reads (alice, who reads only)', {
    timeout: 1_200_000,
  }, async () => {
    const { stmts } = knownStatements();
    const { outcomes, skipped } = await harness.run(stmts, { workers: 4, users: ['alice'] });
    console.log(report('second wall alone (SEE checks off, roles: managed)', outcomes, skipped));
    const leaks = outcomes.filter((o) => o.kind === 'leak');
    expect(outcomes.length).toBeGreaterThan(500);
    expect(leaks.map((o) => `${o.user} ${o.stmt.id}: ${o.stmt.sql}\n  ${o.diff}`)).toEqual([]);
  });

  test('generated writes by bob report 0 leaks, except where a unique hidden column answers', {
    timeout: 900_000,
  }, async () => {
    // Storing into badges.code (hidden, UNIQUE) answers by its success whether the value exists,
    // and Postgres checks the constraint whatever the login may SELECT: only the analysis refuses it.
    const seed = process.env.NI_SEED ? Number(process.env.NI_SEED) : Date.now() % 2 ** 31;
    const stmts: Stmt[] = fc
      .sample(writeArb, { seed, numRuns: 150 })
      .filter((v) => !v.sql.startsWith('INSERT INTO badges'))
      .map((v, i) => ({ id: `write seed=${seed} path=${i}`, sql: v.sql, mode: v.mode }));
    const { outcomes, skipped } = await harness.run(stmts, { workers: 3, users: ['bob'] });
    console.log(report(`second wall alone, generated writes (seed ${seed})`, outcomes, skipped));
    const leaks = outcomes.filter((o) => o.kind === 'leak');
    expect(leaks.map((o) => `${o.user} ${o.stmt.id}: ${o.stmt.sql}\n  ${o.diff}`)).toEqual([]);
  });
});

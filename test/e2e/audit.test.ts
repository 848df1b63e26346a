// Audit lines name each statement's kind as parsed: refused statements too, FETCH and MOVE as themselves, a syntax error as UNPARSED.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';

const logLines: Record<string, unknown>[] = [];
let proxy: TestProxy;
let alice: pg.Client;
beforeAll(async () => {
  proxy = await startTestProxy(undefined, { logLines });
  alice = await proxy.client('alice');
});
afterAll(async () => {
  await alice.end();
  await proxy.close();
});

/** The audit line of the statement whose normalized text is `sql` (waits for it up to 10 s: a loaded machine). */
async function auditOf(sql: string): Promise<Record<string, unknown> | undefined> {
  for (let i = 0; i < 200; i++) {
    const line = logLines.find((l) => l.audit === true && l.sql === sql);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 50));
  }
  return undefined;
}

describe('audit kinds', () => {
  test('a refused statement is audited with its own kind, not UNKNOWN', async () => {
    await expect(alice.query("select id from users where email like 'a%'")).rejects.toThrow('is hidden');
    expect(await auditOf('select id from users where email like $1')).toMatchObject({
      kind: 'SELECT',
      decision: 'refused',
      sqlstate: '42501',
    });
    await expect(alice.query("update users set name = 'x' where id = 1")).rejects.toThrow(
      'permission denied',
    );
    expect(await auditOf('update users set name = $1 where id = $2')).toMatchObject({
      kind: 'UPDATE',
      decision: 'refused',
    });
  });

  test('a string that does not parse is audited as UNPARSED', async () => {
    await expect(alice.query('selec 1')).rejects.toThrow('syntax error');
    expect(await auditOf('selec $1')).toMatchObject({ kind: 'UNPARSED', sqlstate: '42601' });
  });

  test('FETCH and MOVE are audited as FETCH and MOVE, allowed or refused', async () => {
    await alice.query('begin');
    await alice.query('declare c cursor for select id, email from users order by id');
    const rows = await alice.query('fetch 2 from c');
    expect(rows.rows).toEqual([
      { id: 1, email: '*****' },
      { id: 2, email: '*****' },
    ]);
    await alice.query('move 1 in c');
    await alice.query('commit');
    expect(await auditOf('fetch $1 from c')).toMatchObject({
      kind: 'FETCH',
      decision: 'masked',
      masked: ['email'],
      rows: 2,
    });
    expect(await auditOf('move $1 in c')).toMatchObject({ kind: 'MOVE' });
    expect(await auditOf('begin')).toMatchObject({ kind: 'SESSION' });
    await expect(alice.query('fetch 1 from nosuch')).rejects.toThrow('cursor "nosuch" does not exist');
    expect(await auditOf('fetch $1 from nosuch')).toMatchObject({
      kind: 'FETCH',
      decision: 'refused',
      sqlstate: '34000',
    });
  });

  test('an EXECUTE names the masked columns of the statement it runs', async () => {
    await alice.query(
      'prepare audit_masked_names(int) as select id, ssn, name, email from users where id = $1',
    );
    const r = await alice.query('execute audit_masked_names(1)');
    expect(r.rows).toEqual([{ id: 1, ssn: '*****', name: expect.any(String), email: '*****' }]);
    expect(await auditOf('execute audit_masked_names($1)')).toMatchObject({
      kind: 'EXECUTE',
      decision: 'masked',
      masked: ['ssn', 'email'],
      rows: 1,
    });
    await alice.query('deallocate audit_masked_names');
  });
});

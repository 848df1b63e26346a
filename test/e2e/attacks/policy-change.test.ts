// A policy that hides a column after a statement was prepared or a cursor declared: EXECUTE and FETCH never return the newly hidden values.
import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { bind, execute, parse, query, sync } from '../../../src/wire/frontend-encode.js';
import { cells, errorCodes, SSNS } from '../../helpers/outcomes.js';
import { demoConfigSingle, loadTestConfig, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { rawLogin } from '../../helpers/proxy-fixture.js';

/**
 * The demo config under `roles: single` (the upstream login is the tables' owner: PostgreSQL's own
 * privileges are not the wall here), with users.ssn visible to alice (`hideSsn` false) or hidden.
 */
function config(hideSsn: boolean): Record<string, unknown> {
  const c = demoConfigSingle();
  const analyst = (c.roles as Record<string, { permissions: Record<string, unknown>[] }>).analyst;
  if (!analyst) throw new Error('the demo config has no analyst role');
  if (!hideSsn) analyst.permissions = analyst.permissions.filter((p) => p.column !== 'ssn');
  return c;
}

let proxy: TestProxy;
let alice: pg.Client;

beforeAll(async () => {
  proxy = await startTestProxy(config(false));
}, 60_000);

afterAll(async () => {
  await proxy?.close();
});

beforeEach(async () => {
  proxy.server.reload(loadTestConfig(config(false)));
  alice = await proxy.client('alice');
  return async () => {
    await alice.end().catch(() => undefined);
  };
});

/** What a statement returned: its rows as JSON, or its SQLSTATE. */
async function run(sql: string): Promise<string> {
  return alice.query(sql).then(
    (r) => JSON.stringify(r.rows),
    (e: pg.DatabaseError) => `error ${e.code}`,
  );
}

const hide = () => proxy.server.reload(loadTestConfig(config(true)));

describe('a column hidden after PREPARE', () => {
  for (const query of [
    'select ssn from users where id = 1',
    // No origin for the wire to check: a UNION ALL branch, a CTE, a derived table with a row number.
    "select ssn from users where id = 1 union all select 'x' where false",
    'with x as (select ssn from users where id = 1) select ssn from x',
    'select s.ssn from (select ssn, row_number() over () from users where id = 1) s',
  ]) {
    test(`EXECUTE of ${query}`, async () => {
      await alice.query(`prepare p as ${query}`);
      expect(await run('execute p')).toContain(SSNS[0]);
      hide();
      const after = await run('execute p');
      expect(after).not.toContain(SSNS[0]);
    });
  }
});

describe('a column hidden after DECLARE', () => {
  for (const query of [
    'select ssn from users order by id',
    "select ssn from users union all select 'x' where false",
  ]) {
    test(`FETCH of ${query}`, async () => {
      await alice.query('begin');
      await alice.query(`declare c cursor for ${query}`);
      expect(await run('fetch 1 from c')).toContain(SSNS[0]);
      hide();
      const after = await run('fetch all from c');
      for (const s of SSNS) expect(after).not.toContain(s);
      await alice.query('rollback');
    });
  }
});

/** What a statement sent with parameters returned (extended protocol; `name`: a named prepared statement). */
async function runParams(text: string, name?: string): Promise<string> {
  return alice.query({ text, values: [1], ...(name ? { name } : {}) }).then(
    (r) => JSON.stringify(r.rows),
    (e: pg.DatabaseError) => `error ${e.code}`,
  );
}

// The steady path (relay-steady-requests.ts) serves a statement the session ran before from its
// memo, or a Bind from its Parse's decision: a policy change must be decided anew there too.
describe('a column hidden after the statement ran again and again', () => {
  test('Simple Query of the same text, and of the same text with another literal', async () => {
    for (let i = 0; i < 3; i++) expect(await run('select ssn from users where id = 1')).toContain(SSNS[0]);
    hide();
    expect(await run('select ssn from users where id = 1')).not.toContain(SSNS[0]);
    expect(await run('select ssn from users where id = 2')).not.toContain(SSNS[1]);
  });

  test('Parse/Bind/Execute of the unnamed statement', async () => {
    for (let i = 0; i < 3; i++)
      expect(await runParams('select ssn from users where id = $1')).toContain(SSNS[0]);
    hide();
    expect(await runParams('select ssn from users where id = $1')).not.toContain(SSNS[0]);
  });

  test('Bind/Execute of a named prepared statement', async () => {
    for (let i = 0; i < 3; i++)
      expect(await runParams('select ssn from users where id = $1', 'q1')).toContain(SSNS[0]);
    hide();
    expect(await runParams('select ssn from users where id = $1', 'q1')).not.toContain(SSNS[0]);
  });
});

// A protocol-level portal is bound once and may be executed many times (a row limit each time,
// PortalSuspended between): like a SQL cursor's FETCH, its Execute after a reload is decided anew.
describe('a column hidden after Bind, before the Execute of the bound portal', () => {
  test('Execute with a row limit, then again after the reload', async () => {
    const raw = await rawLogin(proxy.port, 'alice');
    try {
      raw.write(query('begin'));
      await raw.untilReady();
      raw.write(
        Buffer.concat([
          parse('', 'select ssn from users order by id'),
          bind({ portal: 'p' }),
          execute('p', 1),
          sync(),
        ]),
      );
      expect(cells(await raw.untilReady())).toEqual([SSNS[0]]);
      hide();
      raw.write(Buffer.concat([execute('p', 1), sync()]));
      const after = await raw.untilReady();
      expect(cells(after)).not.toContain(SSNS[1]);
      // Its text no longer masks what the policy now hides: bound again, it is decided anew.
      expect(errorCodes(after)).toEqual(['0A000']);
    } finally {
      raw.end();
    }
  });
});

// The statements pgwarden prepares on a client's own connection for its in-band catalog reads: the client can neither stand its own query in for them nor drop them, and DEALLOCATE ALL / DISCARD ALL are followed.
// Postgres keeps SQL-level and protocol-level prepared statements in one namespace per session (PREPARE, Parse, DEALLOCATE, Close).
import { expect, test } from 'vitest';
import { BackendCode } from '../../../src/wire/codes.js';
import { decodeErrorResponse } from '../../../src/wire/error-fields.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import { SSNS } from '../../helpers/outcomes.js';
import { demoConfigWithManage } from '../../helpers/proxy.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';
import type { RawClient } from '../../helpers/raw-client.js';

const fx = useProxyFixture({
  // MANAGE added to analyst (alice), who still has no SEE on users.ssn.
  config: () => demoConfigWithManage('analyst'),
  setup: 'drop schema if exists atk_prep cascade; create schema atk_prep',
  teardown: 'drop schema if exists atk_prep cascade',
});

/** Sends `messages` (then Sync unless a Query); the answer as message letters, an ErrorResponse as `E <code>`. */
async function exchange(c: RawClient, ...messages: Buffer[]): Promise<string[]> {
  const simple = messages.length === 1 && messages[0]?.[0] === 0x51;
  c.write(Buffer.concat(simple ? messages : [...messages, fe.sync()]));
  return (await c.untilReady(20_000)).map((f) =>
    f.code === BackendCode.ErrorResponse
      ? `E ${decodeErrorResponse(f.payload).code}`
      : String.fromCharCode(f.code),
  );
}

test('a client cannot PREPARE, Parse, DEALLOCATE or Close the names of the in-band reads, and its reads still bind to the catalog', async () => {
  const c = await fx.proxy.client('alice');
  try {
    await c.query('begin');
    await c.query('create table atk_prep.t (x int)');
    // DDL in the transaction: this statement is analyzed with a catalog read on this connection,
    // which prepares its statements there.
    await c.query('select x from atk_prep.t');
    const names = (
      await c.query(
        "select name from pg_prepared_statements where name like 'pgwarden\\_catalog%' order by name",
      )
    ).rows.map((r: { name: string }) => r.name);
    expect(names.length).toBe(7);
    const head = names.find((n) => n.endsWith('_head')) as string;
    const columns = names.find((n) => n.endsWith('_columns')) as string;
    const fail = (sql: string) =>
      c.query(sql).then(
        () => 'ran',
        (e: { code?: string }) => e.code,
      );
    // Inside the transaction each refusal aborts it, as Postgres's own errors do: a savepoint each.
    for (const sql of [
      // A fake columns read calling ssn `nickname` (a name no rule hides).
      `prepare ${columns}(int8[], bool, bool, int8[]) as select 1`,
      `deallocate ${columns}`,
      `deallocate prepare ${head}`,
      'prepare pgwarden_catalog_mine as select 1',
      `execute ${head}('1:1:', '{}', '{}', '{}', 0, 0, '{}')`,
    ]) {
      await c.query('savepoint s');
      expect(await fail(sql), sql).toBe(sql.startsWith('execute') ? '26000' : '42939');
      await c.query('rollback to savepoint s');
    }
    // Another change, then a read of users: analyzed with a fresh in-band read through the same
    // statements, still pg_catalog's (ssn masked).
    await c.query('create table atk_prep.t2 (y int)');
    const r = await c.query('select ssn from public.users order by id limit 2');
    expect(r.rows.map((x: { ssn: string }) => x.ssn)).toEqual(['*****', '*****']);
    expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
    await c.query('rollback');
  } finally {
    await c.query('rollback').catch(() => undefined);
    await c.end();
  }
  const raw = await fx.raw('alice');
  try {
    expect(await exchange(raw, fe.parse('pgwarden_catalog_x', 'select 1'))).toEqual(['E 42939', 'Z']);
    expect(await exchange(raw, fe.close('S', 'pgwarden_catalog_x'))).toEqual(['E 42939', 'Z']);
    // Other names are as they were.
    expect(await exchange(raw, fe.parse('mine', 'select 1'), fe.close('S', 'mine'))).toEqual(['1', '3', 'Z']);
  } finally {
    raw.end();
  }
});

test('after DEALLOCATE ALL and DISCARD ALL the next in-band read prepares its statements again', async () => {
  const c = await fx.proxy.client('alice');
  try {
    const ours = async () =>
      (
        await c.query(
          "select count(*)::int as n from pg_prepared_statements where name like 'pgwarden\\_catalog%'",
        )
      ).rows[0].n as number;
    for (const drop of ['deallocate all', 'discard all', null]) {
      await c.query('begin');
      await c.query(`create table atk_prep.d (x int)`);
      // Only a read on this connection knows atk_prep.d: it ran, with statements prepared.
      expect((await c.query('select x from atk_prep.d')).rows).toEqual([]);
      expect(await ours()).toBe(7);
      await c.query('rollback');
      if (drop) {
        await c.query(drop);
        expect(await ours()).toBe(0);
      }
    }
  } finally {
    await c.query('rollback').catch(() => undefined);
    await c.end();
  }
});

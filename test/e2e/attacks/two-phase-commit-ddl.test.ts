// PREPARE TRANSACTION of a transaction that changed the catalog is refused (0A000) before it goes upstream: its COMMIT PREPARED, from any session, would publish the change with no commit fence (a statement decided under the old view and waiting on the prepared transaction's locks would run under the new one).
import { describe, expect, test } from 'vitest';
import { bind, execute, parse, query, sync } from '../../../src/wire/frontend-encode.js';
import { errorCodes } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const VIEW = 'atk_twophase_v';
const REDEFINE = `create or replace view ${VIEW} as select id, ssn as name from public.users`;

describe('two-phase commit of DDL through pgwarden', () => {
  const fx = useProxyFixture({
    setup: `drop view if exists ${VIEW}; create view ${VIEW} as select id, name from users`,
    teardown: `drop view if exists ${VIEW}`,
    users: ['alice', 'dba'],
  });

  /** Runs `sql` as dba on a raw connection; returns the SQLSTATEs and the last ReadyForQuery status. */
  async function asDba(messages: Buffer[][]): Promise<{ codes: string[][]; after: string }> {
    const raw = await fx.raw('dba');
    const codes: string[][] = [];
    try {
      for (const m of messages) {
        raw.write(Buffer.concat(m));
        codes.push(errorCodes(await raw.untilReady(60_000)));
      }
      raw.write(query(`select name from ${VIEW} order by id limit 1`));
      const frames = await raw.untilReady(60_000);
      return { codes, after: errorCodes(frames).join(',') };
    } finally {
      raw.end();
    }
  }

  test('after DDL in a block, PREPARE TRANSACTION as a Query is refused 0A000 and the block is left failed', async () => {
    const got = await asDba([
      [query(`begin; ${REDEFINE}`)],
      [query("prepare transaction 'atk_2pc_a'")],
      [query('rollback')],
    ]);
    expect(got.codes).toEqual([[], ['0A000'], []]);
    expect(got.after).toBe('');
  });
  test('so is PREPARE TRANSACTION in the same Query as the DDL', async () => {
    const got = await asDba([
      [query(`begin; ${REDEFINE}; prepare transaction 'atk_2pc_b'`)],
      [query('rollback')],
    ]);
    expect(got.codes).toEqual([['0A000'], []]);
  });
  test('and as an Execute of the extended protocol', async () => {
    const got = await asDba([
      [query(`begin; ${REDEFINE}`)],
      [parse('', "prepare transaction 'atk_2pc_c'"), bind({}), execute(), sync()],
      [query('rollback')],
    ]);
    expect(got.codes).toEqual([[], ['0A000'], []]);
  });
  test('the view is unchanged for alice afterwards', async () => {
    const r = await fx.users.alice.query(`select name from ${VIEW} order by id limit 1`);
    expect(r.rows).toEqual([{ name: 'Ada Tervo' }]);
  });
  test('PREPARE TRANSACTION of a transaction that changed no catalog goes upstream (here: disabled, 55000)', async () => {
    const got = await asDba([[query('begin; select 1')], [query("prepare transaction 'atk_2pc_d'")]]);
    expect(got.codes).toEqual([[], ['55000']]);
  });
});

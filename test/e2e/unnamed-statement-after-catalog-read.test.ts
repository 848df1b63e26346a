// The client's unnamed prepared statement outlives pgwarden's in-band catalog read: Postgres drops it at every Simple Query, pgwarden prepares it again.
import { expect, test } from 'vitest';
import { BackendCode } from '../../src/wire/codes.js';
import { bind, describe, execute, parse, sync } from '../../src/wire/frontend-encode.js';
import { cells, errorCodes } from '../helpers/outcomes.js';
import { useProxyFixture } from '../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  setup: 'drop schema if exists unnamed_reparse cascade; create schema unnamed_reparse',
  teardown: 'drop schema if exists unnamed_reparse cascade',
});

/** Sends messages and a Sync on `c`; resolves with the replies up to its ReadyForQuery. */
const batchOn =
  (c: Awaited<ReturnType<typeof fx.raw>>) =>
  async (...m: Buffer[]) => {
    c.write(Buffer.concat([...m, sync()]));
    return c.untilReady(60_000);
  };

/** Parse, Bind and Execute of `sql` as the prepared statement `name`. */
const run = (name: string, sql: string) => [parse(name, sql), bind({ statement: name }), execute()];

test('a Bind of the unnamed statement after DDL and an in-band catalog read in a transaction runs it (was 26000)', async () => {
  const c = await fx.raw('dba');
  try {
    const batch = batchOn(c);
    expect(cells(await batch(...run('', 'select 1 as one')))).toEqual(['1']);
    expect(errorCodes(await batch(...run('b', 'begin')))).toEqual([]);
    expect(errorCodes(await batch(...run('d', 'create table unnamed_reparse.t (x int)')))).toEqual([]);
    // A named statement over the new table: pgwarden reads the catalog in-band (a Simple Query upstream).
    expect(errorCodes(await batch(...run('q', 'select x from unnamed_reparse.t')))).toEqual([]);
    // Postgres alone still holds the unnamed statement here.
    const again = await batch(bind({ statement: '' }), execute());
    expect(errorCodes(again)).toEqual([]);
    expect(cells(again)).toEqual(['1']);
    expect(cells(await batch(bind({ statement: '' }), execute()))).toEqual(['1']);
    expect(errorCodes(await batch(...run('r', 'rollback')))).toEqual([]);
  } finally {
    c.end();
  }
});

test('a Describe of the unnamed statement after DDL and an in-band catalog read in a transaction describes it (was 26000)', async () => {
  const c = await fx.raw('dba');
  try {
    const batch = batchOn(c);
    expect(errorCodes(await batch(parse('', 'select 2 as two')))).toEqual([]);
    expect(errorCodes(await batch(...run('b', 'begin')))).toEqual([]);
    expect(errorCodes(await batch(...run('d', 'create table unnamed_reparse.u (x int)')))).toEqual([]);
    expect(errorCodes(await batch(...run('q', 'select x from unnamed_reparse.u')))).toEqual([]);
    const described = await batch(describe('S', ''));
    expect(errorCodes(described)).toEqual([]);
    expect(described.map((f) => f.code)).toEqual([
      BackendCode.ParameterDescription,
      BackendCode.RowDescription,
      BackendCode.ReadyForQuery,
    ]);
    expect(cells(await batch(bind({ statement: '' }), execute()))).toEqual(['2']);
    expect(errorCodes(await batch(...run('r', 'rollback')))).toEqual([]);
  } finally {
    c.end();
  }
});

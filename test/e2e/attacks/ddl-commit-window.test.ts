// A COMMIT inside a longer Query message (or pipeline) publishes its DDL at once: other sessions see the change (and its grants) from then, not from the ReadyForQuery.
import { describe, expect, test } from 'vitest';
import { decodeReadyForQuery } from '../../../src/wire/backend.js';
import { BackendCode } from '../../../src/wire/codes.js';
import type { Frame } from '../../../src/wire/framer.js';
import { bind, execute, parse, query, sync } from '../../../src/wire/frontend-encode.js';
import { cells, errorCodes, SSNS } from '../../helpers/outcomes.js';
import { type ProxyFixture, useProxyFixture } from '../../helpers/proxy-fixture.js';
import type { RawClient } from '../../helpers/raw-client.js';

/**
 * The pid of the backend sleeping in a statement marked `marker`, as the owner sees it in
 * pg_stat_activity, once it sleeps (wait_event PgSleep: the statements before the sleep, the COMMIT
 * among them, are through; untilRunningUpstream would see the string active from its first
 * statement). Rejects after 60 s.
 */
async function sleepingUpstream(fx: ProxyFixture, marker: string): Promise<number> {
  for (let i = 0; i < 600; i++) {
    const r = await fx.owner.query(
      `select pid from pg_stat_activity where wait_event = 'PgSleep' and query like $1 and pid <> pg_backend_pid()`,
      [`%${marker}%`],
    );
    if (r.rows[0]) return r.rows[0].pid as number;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${marker} never slept upstream`);
}

/** How dba's redefinition reaches the server: one Query, or one extended-protocol pipeline before its Sync. */
type Protocol = 'simple' | 'extended';

/**
 * dba redefines view `view` (name → ssn) in a transaction whose COMMIT is followed, in the same
 * Query message (or before the same Sync), by a long statement; while that statement runs, alice
 * reads the view.
 */
async function readDuringTheRest(
  fx: ProxyFixture<'alice' | 'dba'>,
  view: string,
  protocol: Protocol = 'simple',
): Promise<unknown> {
  const marker = `${view}_${protocol}_rest`;
  const statements = [
    'begin',
    `create or replace view ${view} as select id, ssn as name from public.users`,
    'commit',
    `select pg_sleep(60) /* ${marker} */`,
  ];
  let running: Promise<unknown>;
  let raw: RawClient | undefined;
  if (protocol === 'simple') {
    running = fx.users.dba.query(statements.join('; ')).catch(() => undefined);
  } else {
    raw = await fx.raw('dba');
    raw.write(Buffer.concat([...statements.flatMap((q) => [parse('', q), bind({}), execute()]), sync()]));
    running = raw.untilReady(120_000);
  }
  const pid = await sleepingUpstream(fx, marker);
  try {
    return await fx.users.alice.query(`select name from ${view} order by id limit 3`).then(
      (r) => r.rows.map((x) => x.name),
      (e: { code?: string }) => e.code,
    );
  } finally {
    await fx.owner.query('select pg_cancel_backend($1)', [pid]);
    await running;
    raw?.end();
    // Back as it was, through pgwarden (so its catalog knows).
    await fx.users.dba.query(`create or replace view ${view} as select id, name from public.users`);
  }
}

describe('every wall on', () => {
  const fx = useProxyFixture({
    setup: 'drop view if exists atk_commit_v; create view atk_commit_v as select id, name from users',
    teardown: 'drop view if exists atk_commit_v',
    users: ['alice', 'dba'],
  });
  test('the view read after the COMMIT is the new one: its column from users.ssn is masked', async () => {
    expect((await fx.users.alice.query('select name from atk_commit_v order by id limit 1')).rows).toEqual([
      { name: 'Ada Tervo' },
    ]);
    const got = await readDuringTheRest(fx, 'atk_commit_v');
    expect(JSON.stringify(got)).not.toContain(SSNS[0]);
    expect(got).toEqual(['*****', '*****', '*****']);
  });
  test('so it is when the COMMIT is an Execute with more Executes behind it before the Sync', async () => {
    expect((await fx.users.alice.query('select name from atk_commit_v order by id limit 1')).rows).toEqual([
      { name: 'Ada Tervo' },
    ]);
    const got = await readDuringTheRest(fx, 'atk_commit_v', 'extended');
    expect(JSON.stringify(got)).not.toContain(SSNS[0]);
    expect(got).toEqual(['*****', '*****', '*****']);
  });
});

/** The frames' ReadyForQuery statuses, in order. */
function readies(frames: readonly Frame[]): string[] {
  return frames
    .filter((f) => f.code === BackendCode.ReadyForQuery)
    .map((f) => decodeReadyForQuery(f.payload));
}

describe('a string cut after its COMMIT answers as one Query', () => {
  const fx = useProxyFixture({
    setup: 'drop schema if exists atk_commit cascade; create schema atk_commit',
    teardown: 'drop schema if exists atk_commit cascade',
  });
  const run = async (sql: string): Promise<Frame[]> => {
    const c = await fx.raw('dba');
    try {
      c.write(query(sql));
      return await c.untilReady(60_000);
    } finally {
      c.end();
    }
  };
  test('both parts run: the client sees their replies and one ReadyForQuery', async () => {
    const got = await run('begin; create table atk_commit.t (a int); commit; select 1 as one');
    expect(errorCodes(got)).toEqual([]);
    expect(cells(got)).toEqual(['1']);
    expect(readies(got)).toEqual(['I']);
    expect(errorCodes(await run('select a from atk_commit.t'))).toEqual([]);
  });
  test('a failure before the COMMIT runs nothing after it, as Postgres does', async () => {
    const got = await run(
      'begin; create table atk_commit.u (a int); select 1/0; commit; create table atk_commit.u2 (a int)',
    );
    expect(errorCodes(got)).toEqual(['22012']);
    expect(readies(got)).toEqual(['E']);
    const after = await run(
      "select count(*) from pg_class where relname in ('u', 'u2') and relnamespace = 'atk_commit'::regnamespace",
    );
    expect(cells(after)).toEqual(['0']);
  });
  test('a failure after the COMMIT keeps what was committed', async () => {
    const got = await run('create table atk_commit.v (a int); commit; select 1/0');
    expect(errorCodes(got)).toEqual(['22012']);
    expect(readies(got)).toEqual(['I']);
    expect(errorCodes(await run('select a from atk_commit.v'))).toEqual([]);
  });
});

describe('PostgreSQL privileges alone (analysis SEE checks and mask at read off)', () => {
  const fx = useProxyFixture({
    setup: 'drop view if exists atk_commit_w; create view atk_commit_w as select id, name from users',
    teardown: 'drop view if exists atk_commit_w',
    users: ['alice', 'dba'],
    walls: { seeChecks: false, rewrite: false },
  });
  test("the set login's grant on the view column is gone once the COMMIT is through (42501)", async () => {
    expect((await fx.users.alice.query('select name from atk_commit_w order by id limit 1')).rows).toEqual([
      { name: 'Ada Tervo' },
    ]);
    const got = await readDuringTheRest(fx, 'atk_commit_w');
    expect(JSON.stringify(got)).not.toContain(SSNS[0]);
    expect(got).toBe('42501');
  });
  test('and with the COMMIT an Execute before more Executes and the Sync', async () => {
    expect((await fx.users.alice.query('select name from atk_commit_w order by id limit 1')).rows).toEqual([
      { name: 'Ada Tervo' },
    ]);
    const got = await readDuringTheRest(fx, 'atk_commit_w', 'extended');
    expect(JSON.stringify(got)).not.toContain(SSNS[0]);
    expect(got).toBe('42501');
  });
});

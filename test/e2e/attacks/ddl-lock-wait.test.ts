// A statement waiting upstream on another session's DDL lock: once that commits it would bind the new definition pgwarden never decided; the commit fence cancels it first (40001).
import { describe, expect, test } from 'vitest';
import { bind, execute, parse, query, sync } from '../../../src/wire/frontend-encode.js';
import { errorCodes, SSNS } from '../../helpers/outcomes.js';
import { demoConfigSingle } from '../../helpers/proxy.js';
import { type ProxyFixture, useProxyFixture } from '../../helpers/proxy-fixture.js';

/**
 * Resolves once `n` lock requests on relation `view` wait (pg_locks; the set logins' queries are
 * not in the owner's pg_stat_activity); rejects after 60 s.
 */
async function waitingOnLock(fx: ProxyFixture, view: string, n: number): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await fx.owner.query(
      `select count(*)::int as n from pg_locks where not granted and locktype = 'relation' and relation = $1::regclass`,
      [view],
    );
    if ((r.rows[0]?.n as number) >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${n} statements never waited for the lock on ${view}`);
}

/** How dba redefines the view and commits. */
type How =
  | 'block'
  | 'extended-commit'
  | 'prepared-commit'
  | 'one-string'
  | 'autocommit'
  | 'extended-autocommit';

/**
 * dba redefines `view` (name → users.ssn) while alice's `select name from view` waits upstream on
 * the view's lock; dba commits. Returns alice's rows (names) or her error's SQLSTATE, and what she
 * reads afterwards. `block`: BEGIN and CREATE OR REPLACE in one Query, COMMIT in another;
 * `extended-commit`: the COMMIT as Parse/Bind/Execute/Sync; `prepared-commit`: as Bind/Execute/Sync
 * of a statement prepared before; `one-string`: BEGIN, the
 * redefinition, COMMIT and a read of the view in one Query (run in stages); `autocommit`: the
 * redefinition alone; `extended-autocommit`: it alone as Parse/Bind/Execute/Sync. The last three
 * are made to wait first on the owner's lock on the view, so that alice's statement queues behind
 * dba's.
 */
async function readDuringRedefinition(
  fx: ProxyFixture<'alice' | 'dba'>,
  view: string,
  how: How,
): Promise<{ during: unknown; after: unknown }> {
  const redefine = `create or replace view ${view} as select id, ssn as name from public.users`;
  const read = (sql: string) =>
    fx.users.alice.query(sql).then(
      (r) => r.rows.map((x) => x.name as string),
      (e: { code?: string }) => e.code,
    );
  let during: unknown;
  if (how === 'block') {
    await fx.users.dba.query(`begin; ${redefine}`);
    const alice = read(`select name from ${view} order by id limit 3`);
    await waitingOnLock(fx, view, 1);
    await fx.users.dba.query('commit');
    during = await alice;
  } else if (how === 'extended-commit' || how === 'prepared-commit') {
    const raw = await fx.raw('dba');
    try {
      // A COMMIT prepared once and bound again (pgjdbc after five): its Bind and Execute take the steady path.
      if (how === 'prepared-commit') {
        raw.write(Buffer.concat([parse('c', 'commit'), sync()]));
        expect(errorCodes(await raw.untilReady(60_000))).toEqual([]);
      }
      raw.write(query(`begin; ${redefine}`));
      expect(errorCodes(await raw.untilReady(60_000))).toEqual([]);
      const alice = read(`select name from ${view} order by id limit 3`);
      await waitingOnLock(fx, view, 1);
      const commit = how === 'prepared-commit' ? [bind({ statement: 'c' })] : [parse('', 'commit'), bind({})];
      raw.write(Buffer.concat([...commit, execute(), sync()]));
      expect(errorCodes(await raw.untilReady(60_000))).toEqual([]);
      during = await alice;
    } finally {
      raw.end();
    }
  } else {
    // The owner holds the view: dba's redefinition waits, and alice's read queues behind it.
    await fx.owner.query('begin');
    await fx.owner.query(`select * from ${view} limit 0`);
    const sql = how === 'one-string' ? `begin; ${redefine}; commit; select count(*) from ${view}` : redefine;
    const raw = how === 'extended-autocommit' ? await fx.raw('dba') : undefined;
    raw?.write(Buffer.concat([parse('', redefine), bind({}), execute(), sync()]));
    const dba = raw ? raw.untilReady(60_000).then(errorCodes) : fx.users.dba.query(sql).then(() => []);
    await waitingOnLock(fx, view, 1);
    const alice = read(`select name from ${view} order by id limit 3`);
    await waitingOnLock(fx, view, 2);
    await fx.owner.query('commit');
    try {
      expect(await dba).toEqual([]);
    } finally {
      raw?.end();
    }
    during = await alice;
  }
  const after = await read(`select name from ${view} order by id limit 3`);
  // Back as it was, through pgwarden (so its catalog knows).
  await fx.users.dba.query(`create or replace view ${view} as select id, name from public.users`);
  return { during, after };
}

const HOWS: readonly How[] = [
  'block',
  'extended-commit',
  'prepared-commit',
  'one-string',
  'autocommit',
  'extended-autocommit',
];

/** One suite of the four ways, with `walls` and `config`; `after`: what alice reads once the change is published. */
function suite(
  name: string,
  view: string,
  opts: {
    walls?: { seeChecks?: boolean; rewrite?: boolean };
    config?: () => Record<string, unknown>;
    after: unknown;
  },
) {
  describe(name, () => {
    const fx = useProxyFixture({
      setup: `drop view if exists ${view}; create view ${view} as select id, name from users`,
      teardown: `drop view if exists ${view}`,
      users: ['alice', 'dba'],
      ...(opts.walls ? { walls: { seeChecks: true, rewrite: true, ...opts.walls } } : {}),
      ...(opts.config ? { config: opts.config } : {}),
    });
    for (const how of HOWS) {
      test(`${how}: the waiting read is canceled (40001), never answered with the new definition`, async () => {
        expect(await fx.users.alice.query(`select name from ${view} order by id limit 1`)).toMatchObject({
          rows: [{ name: 'Ada Tervo' }],
        });
        const got = await readDuringRedefinition(fx, view, how);
        expect(JSON.stringify(got)).not.toContain(SSNS[0]);
        expect(got.during).toBe('40001');
        expect(got.after).toEqual(opts.after);
      });
    }
  });
}

suite('every wall on', 'atk_lockwait_v', { after: ['*****', '*****', '*****'] });
suite('PostgreSQL privileges alone (analysis SEE checks and mask at read off)', 'atk_lockwait_p', {
  walls: { seeChecks: false, rewrite: false },
  after: '42501',
});
suite('the analysis alone (mask at read off, roles: single)', 'atk_lockwait_a', {
  walls: { rewrite: false },
  config: demoConfigSingle,
  after: ['*****', '*****', '*****'],
});
suite('mask at read alone (analysis SEE checks off, roles: single)', 'atk_lockwait_m', {
  walls: { seeChecks: false },
  config: demoConfigSingle,
  after: ['*****', '*****', '*****'],
});

describe('a catalog read waiting on the committing transaction', () => {
  const view = 'atk_lockwait_catalog_v';
  const fx = useProxyFixture({
    setup: `drop view if exists ${view}; create view ${view} as select id, name from users`,
    teardown: `drop view if exists ${view}`,
    users: ['alice', 'dba'],
  });
  test('is not canceled: it binds only pg_catalog and is answered after the COMMIT, as direct (pgcli refreshes its completions so during a migration)', async () => {
    await fx.users.dba.query(
      `begin; create or replace view ${view} as select id, name, 'v2'::text as version from public.users`,
    );
    // pg_relation_size opens the view (AccessShareLock): it waits for dba's transaction.
    const size = fx.users.alice
      .query<{ n: string }>(`select pg_catalog.pg_relation_size('${view}'::regclass) as n`)
      .then(
        (r) => r.rows[0]?.n,
        (e: { code?: string }) => e.code,
      );
    await waitingOnLock(fx, view, 1);
    await fx.users.dba.query('commit');
    expect(await size).toBe('0');
    // A read of the view itself waiting meanwhile is still canceled (the suites above).
  });
});

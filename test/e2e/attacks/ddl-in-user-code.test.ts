// DDL run by user code (a function called in a SELECT, dynamic SQL) changes the catalog as DDL written out does: pgwarden reads the catalog again after it, so a view redefined that way is never read under its old definition.
import { describe, expect, test } from 'vitest';
import { SSNS } from '../../helpers/outcomes.js';
import { demoConfigSingle } from '../../helpers/proxy.js';
import { type ProxyFixture, useProxyFixture } from '../../helpers/proxy-fixture.js';

/**
 * Setup for view `view` (id, name from users) and plpgsql functions that redefine it by dynamic SQL:
 * `<view>_to_ssn()` points its column `name` at users.ssn, `<view>_back()` points it back.
 */
function setup(view: string): string {
  const redefine = (fn: string, column: string) =>
    `create or replace function ${fn}() returns int language plpgsql as $f$ begin ` +
    `execute 'create or replace view ${view} as select id, ${column} as name from public.users'; return 1; end $f$`;
  return [
    `drop view if exists ${view}`,
    `create view ${view} as select id, name from users`,
    redefine(`${view}_to_ssn`, 'ssn'),
    redefine(`${view}_back`, 'name'),
    `create or replace procedure ${view}_proc() language plpgsql as $f$ begin perform ${view}_to_ssn(); end $f$`,
  ].join('; ');
}

function teardown(view: string): string {
  return `drop view if exists ${view}; drop function if exists ${view}_to_ssn(); drop function if exists ${view}_back(); drop procedure if exists ${view}_proc()`;
}

/** What alice reads from `view`: its names, or the SQLSTATE. */
async function read(fx: ProxyFixture<'alice' | 'dba'>, view: string): Promise<unknown> {
  return fx.users.alice.query(`select name from ${view} order by id limit 3`).then(
    (r) => r.rows.map((x) => x.name),
    (e: { code?: string }) => e.code,
  );
}

/** How dba runs the function that redefines the view. */
const HOWS: Readonly<Record<string, (view: string) => string>> = {
  'a function called in a SELECT': (v) => `select ${v}_to_ssn()`,
  'a function called in FROM': (v) => `select * from ${v}_to_ssn()`,
  'a function called in a SELECT inside BEGIN … COMMIT': (v) => `begin; select ${v}_to_ssn(); commit`,
  'a function called in a SELECT, then COMMIT in a later Query': (v) => `begin; select ${v}_to_ssn()`,
  'a procedure called by CALL': (v) => `call ${v}_proc()`,
};

/** dba redefines the view and, later in the same Query, reads it (a staged string): the read is decided under the new definition. */
const STAGED: Readonly<Record<string, (view: string) => string>> = {
  'the same Query, one implicit transaction': (v) =>
    `select ${v}_to_ssn(); select name from ${v} order by id limit 3`,
  'the same Query, in BEGIN … COMMIT': (v) =>
    `begin; select ${v}_to_ssn(); select name from ${v} order by id limit 3; commit`,
};

/** Resolves once a lock request on relation `view` waits (pg_locks); rejects after 60 s. */
async function waitingOnLock(fx: ProxyFixture, view: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const r = await fx.owner.query(
      `select count(*)::int as n from pg_locks where not granted and locktype = 'relation' and relation = $1::regclass`,
      [view],
    );
    if ((r.rows[0]?.n as number) >= 1) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no statement waited for the lock on ${view}`);
}

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
      setup: setup(view),
      teardown: teardown(view),
      users: ['alice', 'dba'],
      ...(opts.walls ? { walls: { seeChecks: true, rewrite: true, ...opts.walls } } : {}),
      ...(opts.config ? { config: opts.config } : {}),
    });
    for (const [how, sql] of Object.entries(HOWS)) {
      test(`${how}: the view is read with its new definition (users.ssn hidden)`, async () => {
        expect(await read(fx, view)).toEqual(['Ada Tervo', 'Bram Wendt', 'Cleo Zeller']);
        try {
          await fx.users.dba.query(sql(view));
          if (how.endsWith('later Query')) await fx.users.dba.query('commit');
          const after = await read(fx, view);
          expect(JSON.stringify(after)).not.toContain(SSNS[0]);
          expect(after).toEqual(opts.after);
        } finally {
          await fx.users.dba.query('rollback').catch(() => undefined);
          await fx.users.dba.query(`select ${view}_back()`);
        }
        expect(await read(fx, view)).toEqual(['Ada Tervo', 'Bram Wendt', 'Cleo Zeller']);
      });
    }
    test("alice's read waiting on the lock of dba's open transaction, which redefined the view in a function: canceled (40001) at its COMMIT, never answered with the new definition", async () => {
      expect(await read(fx, view)).toEqual(['Ada Tervo', 'Bram Wendt', 'Cleo Zeller']);
      try {
        await fx.users.dba.query(`begin; select ${view}_to_ssn()`);
        const during = read(fx, view);
        await waitingOnLock(fx, view);
        await fx.users.dba.query('commit');
        expect(await during).toBe('40001');
        expect(await read(fx, view)).toEqual(opts.after);
      } finally {
        await fx.users.dba.query('rollback').catch(() => undefined);
        await fx.users.dba.query(`select ${view}_back()`);
      }
    });
    for (const [how, sql] of Object.entries(STAGED)) {
      test(`dba's read after the redefinition in ${how}: decided under the new definition`, async () => {
        // dba sees every column: the point is that the statement after the call is analyzed after it.
        expect(await read(fx, view)).toEqual(['Ada Tervo', 'Bram Wendt', 'Cleo Zeller']);
        try {
          const results = (await fx.users.dba.query(sql(view))) as unknown as { rows: { name?: string }[] }[];
          const names = results.flatMap((r) => r.rows.map((x) => x.name)).filter((x) => x !== undefined);
          expect(names).toEqual(SSNS.slice(0, 3));
          const after = await read(fx, view);
          expect(JSON.stringify(after)).not.toContain(SSNS[0]);
          expect(after).toEqual(opts.after);
        } finally {
          await fx.users.dba.query('rollback').catch(() => undefined);
          await fx.users.dba.query(`select ${view}_back()`);
        }
      });
    }
  });
}

suite('every wall on', 'atk_ucode_v', { after: ['*****', '*****', '*****'] });
suite('PostgreSQL privileges alone (analysis SEE checks and mask at read off)', 'atk_ucode_p', {
  walls: { seeChecks: false, rewrite: false },
  after: '42501',
});
suite('the analysis alone (mask at read off, roles: single)', 'atk_ucode_a', {
  walls: { rewrite: false },
  config: demoConfigSingle,
  after: ['*****', '*****', '*****'],
});
suite('mask at read alone (analysis SEE checks off, roles: single)', 'atk_ucode_m', {
  walls: { seeChecks: false },
  config: demoConfigSingle,
  after: ['*****', '*****', '*****'],
});

// The grant sync's last message: every role's GRANT/REVOKE statements and the COMMIT in one round trip; a statement whose object was dropped meanwhile is skipped and the rest still commits.
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { applyGrantsAndCommit } from '../../src/roles/grant-apply.js';
import { superuserClient } from '../helpers/drivers/tools.js';

const P = `gac${process.pid}`;
const log = pino({ level: 'silent' });
let su: Awaited<ReturnType<typeof superuserClient>>;
let oids: { kept: number; gone: number };

beforeAll(async () => {
  su = await superuserClient();
  await su.query(
    `DROP TABLE IF EXISTS ${P}_kept, ${P}_gone; DROP ROLE IF EXISTS ${P}_r1; DROP ROLE IF EXISTS ${P}_r2`,
  );
  await su.query(
    `CREATE ROLE ${P}_r1; CREATE ROLE ${P}_r2; CREATE TABLE ${P}_kept (a int); CREATE TABLE ${P}_gone (a int)`,
  );
  const r = await su.query(
    `SELECT '${P}_kept'::regclass::oid::int AS kept, '${P}_gone'::regclass::oid::int AS gone`,
  );
  oids = r.rows[0];
});
afterAll(async () => {
  await su.query(
    `DROP TABLE IF EXISTS ${P}_kept, ${P}_gone; DROP ROLE IF EXISTS ${P}_r1; DROP ROLE IF EXISTS ${P}_r2`,
  );
  await su.end();
});

/** What the grant difference names a relation by (as a held privilege would). */
const names = () =>
  new Map([
    [oids.kept, { schema: 'public', name: `${P}_kept`, relkind: 'r' }],
    [oids.gone, { schema: 'public', name: `${P}_gone`, relkind: 'r' }],
  ]);
const select = (role: string, table: string) =>
  su
    .query(`SELECT has_column_privilege($1, $2, 'a', 'SELECT') AS ok`, [role, table])
    .then((r) => r.rows[0].ok as boolean);

test('two roles in one message with the COMMIT; after a DROP meanwhile, the rest is applied and committed', async () => {
  await su.query('BEGIN');
  const applied = await applyGrantsAndCommit(
    su,
    [
      {
        role: `${P}_r1`,
        held: { keys: new Set(), relations: names() },
        desired: new Set([`C|${oids.kept}|a|SELECT`]),
      },
      {
        role: `${P}_r2`,
        held: { keys: new Set(), relations: names() },
        desired: new Set([`C|${oids.gone}|a|SELECT`]),
      },
    ],
    undefined,
    log,
  );
  expect(applied).toBe(2);
  expect(await outsideTransaction()).toBe(true);
  expect([await select(`${P}_r1`, `${P}_kept`), await select(`${P}_r2`, `${P}_gone`)]).toEqual([true, true]);

  // Revoke both, one table dropped before: the other revoke still commits.
  await su.query(`DROP TABLE ${P}_gone`);
  await su.query('BEGIN');
  const held = (key: string) => ({ keys: new Set([key]), relations: names() });
  const again = await applyGrantsAndCommit(
    su,
    [
      { role: `${P}_r2`, held: held(`C|${oids.gone}|a|SELECT`), desired: new Set() },
      { role: `${P}_r1`, held: held(`C|${oids.kept}|a|SELECT`), desired: new Set() },
    ],
    undefined,
    log,
  );
  expect(again).toBe(1);
  expect(await outsideTransaction()).toBe(true);
  expect(await select(`${P}_r1`, `${P}_kept`)).toBe(false);
  // Nothing to change: the transaction is still ended.
  await su.query('BEGIN');
  expect(await applyGrantsAndCommit(su, [], undefined, log)).toBe(0);
  expect(await outsideTransaction()).toBe(true);
});

/** Whether `su` is outside a transaction block (SAVEPOINT then fails with 25P01). */
function outsideTransaction(): Promise<boolean> {
  return su.query('SAVEPOINT probe').then(
    async () => {
      await su.query('ROLLBACK');
      return false;
    },
    (e: { code?: string }) => e.code === '25P01',
  );
}

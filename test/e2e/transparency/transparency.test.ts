// Transparency: for dba (every permission and SEE) pgwarden answers every case in cases.sql with the bytes PostgreSQL sends directly.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE } from '../../../src/embedded/demo.js';
import { appClient, dropDatabase, superuserClient, upstreamEntry } from '../../helpers/drivers/tools.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { type Case, parseCases, WireSession } from './wire-session.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const { setup, cases } = parseCases(fs.readFileSync(path.join(HERE, 'cases.sql'), 'utf8'));
/** The setup is loaded once here; both sides get a copy (CREATE DATABASE … TEMPLATE keeps every OID). */
const TEMPLATE = 'pgw_transparency_template';
const DIRECT = 'pgw_transparency_direct';
const VIA = 'pgw_transparency_proxy';

let proxy: TestProxy;
let direct: WireSession;
let via: WireSession;
beforeAll(async () => {
  for (const db of [DIRECT, VIA, TEMPLATE]) await dropDatabase(db);
  const admin = await superuserClient();
  await admin.query(`CREATE DATABASE ${TEMPLATE} OWNER ${DEMO_APP_ROLE}`);
  const app = await appClient(TEMPLATE);
  let newOidAbove = 0;
  try {
    await app.query(setup);
    const r = await app.query<{ max: string }>(
      'select greatest((select max(oid::int8) from pg_class), (select max(oid::int8) from pg_type)) as max',
    );
    newOidAbove = Number(r.rows[0]?.max);
  } finally {
    await app.end();
  }
  try {
    for (const db of [DIRECT, VIA]) {
      await admin.query(
        `CREATE DATABASE ${pg.escapeIdentifier(db)} TEMPLATE ${TEMPLATE} OWNER ${DEMO_APP_ROLE}`,
      );
    }
  } finally {
    await admin.end();
  }
  const cfg = demoConfigObject();
  (cfg.databases as Record<string, unknown>)[VIA] = upstreamEntry(VIA);
  proxy = await startTestProxy(cfg);
  direct = await WireSession.open(inject('pg').port, DEMO_APP_ROLE, DEMO_APP_PASSWORD, DIRECT, newOidAbove);
  via = await WireSession.open(proxy.port, 'dba', 'dba', VIA, newOidAbove);
});
afterAll(async () => {
  direct?.close();
  via?.close();
  await proxy?.close();
  for (const db of [DIRECT, VIA, TEMPLATE]) await dropDatabase(db).catch(() => undefined);
});

function title(k: Case, i: number): string {
  const first = k.sql.split('\n')[0] ?? '';
  return `#${i + 1} (cases.sql:${k.line + 1}) ${first.length > 90 ? `${first.slice(0, 90)}…` : first}`;
}

describe('transparency: dba through pgwarden answers as PostgreSQL does', () => {
  test(`the statement list has at least 150 cases (${cases.length})`, () => {
    expect(cases.length).toBeGreaterThanOrEqual(150);
  });

  test('startup: the same ParameterStatus values', () => {
    const strip = (m: ReadonlyMap<string, string>) =>
      Object.fromEntries([...m].filter(([k]) => k !== 'session_authorization'));
    expect(strip(via.startupParams)).toEqual(strip(direct.startupParams));
  });

  cases.forEach((k, i) => {
    if (k.differs) {
      const d = k.differs;
      test(`${title(k, i)} — differs: ${d.sqlstate}, ${d.reason}`, async () => {
        for (const mode of k.modes) {
          if (k.isolate) await direct.run({ line: 0, sql: 'begin', modes: ['simple'] }, 'simple');
          const dt = await direct.run(k, mode);
          if (k.isolate) await direct.run({ line: 0, sql: 'rollback', modes: ['simple'] }, 'simple');
          const vt = await via.run(k, mode);
          const errors = (t: string[]) => t.filter((l) => l.startsWith('E '));
          expect(
            errors(vt).some((l) => l.includes(`"code":"${d.sqlstate}"`)),
            vt.join('\n'),
          ).toBe(true);
          // When pgwarden answers as Postgres does, the entry in cases.sql is stale: make it a plain case.
          expect(vt, `now transparent in ${mode} mode: drop differs= at cases.sql:${k.line}`).not.toEqual(dt);
          expect(vt.at(-1)).toBe(k.isolate ? 'Z I' : dt.at(-1));
        }
      });
      return;
    }
    test(title(k, i), async () => {
      for (const mode of k.modes) {
        // The two databases are independent: both sides run at once.
        const [dt, vt] = await Promise.all([direct.run(k, mode), via.run(k, mode)]);
        expect(vt, `${mode} mode, cases.sql:${k.line + 1}:\n${k.sql}`).toEqual(dt);
      }
    });
  });
});

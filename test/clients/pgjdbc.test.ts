// pgjdbc (Debian libpostgresql-jdbc-java, the machine's Java 17) through pgwarden: metadata, named statements, binary transfer, masks, 42501.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  appClient,
  driverConfig,
  requireTool,
  startWireTap,
  type WireTap,
} from '../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { run } from '../helpers/run-program.js';

const JAR = '/usr/share/java/postgresql.jar';
const PROGRAM = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../helpers/drivers/JdbcScenario.java',
);
/** Executions of one PreparedStatement before pgjdbc switches to a named server statement. */
const PREPARE_THRESHOLD = 3;

let proxy: TestProxy;
let tap: WireTap;
let javaVersion = '';
let o: Record<string, unknown> = {};
/** The prepared query's rows as read directly upstream. */
let expected: unknown[] = [];
beforeAll(async () => {
  javaVersion = requireTool(
    'Java (single-file source launcher)',
    ['java', '-version'],
    'openjdk-17-jdk-headless',
  );
  requireTool('pgjdbc', ['test', '-r', JAR], 'libpostgresql-jdbc-java');
  const direct = await appClient('demo');
  const d = await direct.query(
    "select u.id, u.name, u.org_id, coalesce(sum(o.amount)::text, 'null') as total from users u left join orders o on o.user_id = u.id where u.id <= 6 group by u.id order by u.id",
  );
  await direct.end();
  expected = d.rows.map((r: { id: number; name: string; org_id: number; total: string }) => [
    r.id,
    r.name,
    r.org_id,
    r.total,
  ]);
  proxy = await startTestProxy(driverConfig());
  tap = await startWireTap(proxy.port);
  const url = (user: string) =>
    `jdbc:postgresql://127.0.0.1:${tap.port}/demo?user=${user}&password=${user}&sslmode=disable&prepareThreshold=${PREPARE_THRESHOLD}`;
  const r = await run('java', ['-cp', JAR, PROGRAM, url('dba'), url('alice'), 'drv_jdbc'], {
    timeoutMs: 55_000,
  });
  if (r.code !== 0) throw new Error(`pgjdbc scenario crashed (exit ${r.code}):\n${r.stderr}\n${r.stdout}`);
  o = JSON.parse(r.stdout) as Record<string, unknown>;
}, 90_000);
afterAll(async () => {
  await tap?.close();
  await proxy?.close();
});

/** One section's observations; a section that threw fails here with the driver's message. */
function section(name: string): Record<string, unknown> {
  const s = o[name] as Record<string, unknown> | undefined;
  if (s && typeof s === 'object' && 'exception' in s) {
    throw new Error(
      `pgjdbc: ${name} threw ${String(s.exception)} [${String(s.sqlstate)}]: ${String(s.text)}`,
    );
  }
  return s ?? {};
}

describe('pgjdbc (libpostgresql-jdbc-java)', () => {
  test('runs on the machine Java with the Debian driver', () => {
    expect(javaVersion).toMatch(/version "(1[7-9]|2\d)/);
    expect(String(o.driver)).toMatch(/^42\./);
  });

  test('SCRAM login and DatabaseMetaData getTables/getColumns/getPrimaryKeys', () => {
    const s = section('introspection');
    expect(s.product).toBe('PostgreSQL 15');
    expect(s.tables).toEqual(expect.arrayContaining(['orders', 'orgs', 'users']));
    expect(s.columns).toEqual([
      ['id', 'int4', 1],
      ['name', 'text', 2],
      ['email', 'text', 3],
      ['ssn', 'text', 4],
      ['org_id', 'int4', 5],
    ]);
    expect(s.primaryKeys).toEqual([['id', 'users_pkey']]);
  });

  test('simple and prepared queries; past prepareThreshold: named statements and binary results', () => {
    const s = section('queries');
    expect(s.simple).toBeGreaterThanOrEqual(12);
    expect(s.prepared).toEqual(expected);
    expect(s.namedStatements).toBeGreaterThanOrEqual(1);
    const named = tap.log.parses.filter((p) => /^S_\d+$/.test(p.name) && p.sql.includes('lateral'));
    expect(named.length).toBeGreaterThanOrEqual(1);
    const binds = tap.log.binds.filter((b) => named.some((p) => p.name === b.statement));
    expect(binds.length).toBeGreaterThanOrEqual(6 - PREPARE_THRESHOLD);
    expect(binds.some((b) => b.resultFormats.includes(1))).toBe(true);
  });

  test('a transaction with an error, a savepoint, and recovery', () => {
    const s = section('transaction');
    expect(s.txError).toMatchObject({ class: 'org.postgresql.util.PSQLException', sqlstate: '23505' });
    expect(s.savepointError).toMatchObject({ sqlstate: '22012' });
    expect(s.afterRecovery).toEqual([
      [2, 'b'],
      [3, 'c'],
    ]);
  });

  test('alice: masked text and int4 columns decode as text, before and after the switch to binary', () => {
    const s = section('aliceMasks');
    expect(s.rows).toEqual([1, 2, 3, 4, 5, 6].map((i) => [i, '*****', '*****', '*****']));
    for (const t of s.types as unknown[]) expect(t).toEqual(['int4', 'text', 'text']);
  });

  test('alice: refusals are PSQLException with SQLSTATE 42501, simple and prepared', () => {
    const s = section('aliceRefused');
    expect(s.simple).toMatchObject({ class: 'org.postgresql.util.PSQLException', sqlstate: '42501' });
    expect(s.prepared).toMatchObject({ class: 'org.postgresql.util.PSQLException', sqlstate: '42501' });
    expect(s.after).toBe(1);
  });
});

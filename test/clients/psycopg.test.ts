// psycopg 3 (Debian python3-psycopg, run by /usr/bin/python3) through pgwarden: text, binary, prepared, cursors, masks, refusals.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { driverConfig, requireTool } from '../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { run } from '../helpers/run-program.js';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../helpers/drivers/psycopg_scenario.py',
);

let proxy: TestProxy;
let version = '';
let o: Record<string, unknown> = {};
beforeAll(async () => {
  version = requireTool(
    'psycopg 3 for /usr/bin/python3',
    [PYTHON, '-c', 'import psycopg; print(psycopg.__version__)'],
    'python3-psycopg',
  );
  proxy = await startTestProxy(driverConfig());
  const r = await run(PYTHON, [SCRIPT, proxy.url('dba'), proxy.url('alice'), 'drv_psycopg'], {
    timeoutMs: 45_000,
  });
  if (r.code !== 0)
    throw new Error(`psycopg ${version} scenario crashed (exit ${r.code}):\n${r.stderr}\n${r.stdout}`);
  o = JSON.parse(r.stdout) as Record<string, unknown>;
});
afterAll(async () => {
  await proxy?.close();
});

/** One section's observations; a section that raised fails here with the driver's own traceback. */
function section(name: string): Record<string, unknown> {
  const s = o[name] as Record<string, unknown> | undefined;
  if (s && typeof s === 'object' && 'exception' in s) {
    throw new Error(
      `psycopg ${version}: ${name} raised ${String(s.exception)} [${String(s.sqlstate)}]: ${String(s.text)}\n${String(s.trace)}`,
    );
  }
  return s ?? {};
}

describe(`psycopg 3 (python3-psycopg)`, () => {
  test('runs the Debian build for /usr/bin/python3', () => {
    expect(o.version).toBe(version);
  });

  test('SCRAM login and introspection', () => {
    const s = section('introspection');
    expect(s.server_version).toBeGreaterThanOrEqual(150000);
    expect(s.tables).toEqual(expect.arrayContaining(['orders', 'orgs', 'users']));
    expect(s.columns).toEqual([
      ['id', 'integer'],
      ['name', 'text'],
      ['email', 'text'],
      ['ssn', 'text'],
      ['org_id', 'integer'],
    ]);
  });

  test('simple, parameterized, binary and prepared queries', () => {
    const s = section('queries');
    expect(s.simple).toBeGreaterThanOrEqual(12);
    expect(s.param_text).toEqual([3, 'Cleo Zeller', 4]);
    expect(s.binary).toEqual([5, '819.19', 'rush', '2024-02-29', [1, 2, 3]]);
    expect(s.binary_types).toEqual([23, 1700, 25, 1082, 1007]);
    expect(s.prepared).toEqual(['Ada Tervo', 'Bram Wendt', 'Dario Solberg']);
    expect(s.prepared_server).toBeGreaterThanOrEqual(1);
  });

  test('a transaction with an error, a savepoint, and recovery', () => {
    const s = section('transaction');
    expect(s.tx_error).toMatchObject({ type: 'UniqueViolation', sqlstate: '23505' });
    expect(s.savepoint_error).toMatchObject({ type: 'DivisionByZero', sqlstate: '22012' });
    expect(s.after_recovery).toEqual([
      [2, 'b'],
      [3, 'c'],
    ]);
  });

  test('server-side cursors, text and binary', () => {
    const s = section('server_cursors');
    expect(s.text).toEqual({ first: [1, 2, 3], rest_count: 37 });
    expect(s.binary).toEqual([
      [1, 6],
      [2, 7],
      [3, 2],
      [4, 2],
      [5, 1],
      [6, 4],
      [7, 7],
      [8, 4],
      [9, 7],
      [10, 10],
    ]);
  });

  test('alice: masked columns (text and int4) decode as text, binary requested or not', () => {
    const s = section('alice_masks');
    expect(s.text).toEqual([2, '*****', '*****']);
    expect(s.binary).toEqual([2, '*****', '*****']);
    expect(s.binary_types).toEqual([23, 25, 25]);
  });

  test('alice: a binary server-side cursor is masked', () => {
    expect(section('alice_cursor')).toEqual([
      [1, '*****', '*****'],
      [2, '*****', '*****'],
    ]);
  });

  test('alice: a refused statement is psycopg.errors.InsufficientPrivilege (42501)', () => {
    const s = section('alice_refused');
    expect(s.refused).toMatchObject({ type: 'InsufficientPrivilege', sqlstate: '42501' });
    expect(s.after).toBe(1);
  });
});

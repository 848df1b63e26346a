// `pgwarden check` against the demo database: verdicts, masked columns, refusals naming the column and clause, exit codes.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, inject, test } from 'vitest';
import YAML from 'yaml';
import { demoConfigObject, testEnv } from '../helpers/proxy.js';

const BIN = path.resolve(import.meta.dirname, '../../bin/pgwarden.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-check-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function writeConfig(obj: Record<string, unknown> = demoConfigObject(), name = 'pgwarden.yaml'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, YAML.stringify(obj));
  return file;
}

const config = writeConfig();

function check(args: string[], env: NodeJS.ProcessEnv = testEnv()) {
  const r = spawnSync(process.execPath, [BIN, 'check', ...args], { env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface JsonReport {
  verdict: string;
  roles: string[];
  refusal?: { sqlstate: string; message: string; position?: number; rule?: string; detail?: string };
  statements: {
    verdict: string;
    mask?: number[];
    columns: { name: string; lineage: string[] | null; masked: boolean }[];
    checks: { action: string; object: string; granted: boolean; rule: string | null }[];
  }[];
}

function checkJson(
  user: string,
  sql: string,
  extra: string[] = [],
): { code: number | null; report: JsonReport } {
  const r = check(['--config', config, '--user', user, '--json', ...extra, sql]);
  expect(r.stderr).toBe('');
  return { code: r.code, report: JSON.parse(r.stdout) as JsonReport };
}

describe('pgwarden check on the demo', () => {
  test('alice: select id, email from users — allowed, column 2 masked, lineage shown', () => {
    const { code, report } = checkJson('alice', 'select id, email from users');
    expect(code).toBe(0);
    expect(report.verdict).toBe('allowed with masks');
    expect(report.roles).toEqual(['analyst']);
    expect(report.statements[0]?.columns).toEqual([
      { name: 'id', lineage: ['public.users.id'], masked: false },
      { name: 'email', lineage: ['public.users.email'], masked: true },
    ]);
    expect(report.statements[0]?.checks).toContainEqual({
      action: 'SEE',
      object: 'demo.public.users.email',
      granted: false,
      rule: 'roles.analyst.permissions[1]',
      ruleText: 'roles.analyst.permissions[1] (deny SEE on demo.public.users.email)',
    });
  });

  test("alice: select id from users where email like 'a%' — refused naming users.email and WHERE, exit 1", () => {
    const { code, report } = checkJson('alice', "select id from users where email like 'a%'");
    expect(code).toBe(1);
    expect(report.verdict).toBe('refused');
    expect(report.refusal).toMatchObject({
      sqlstate: '42501',
      message: 'column users.email is hidden from you and cannot be tested in WHERE',
      position: 28,
      rule: 'roles.analyst.permissions[1]',
    });
  });

  test('the JSON report names the upstream read; without the upstream port, nothing is read', () => {
    const { port } = inject('pg');
    const r = check(['--config', config, '--user', 'alice', '--json', 'select 1']);
    expect((JSON.parse(r.stdout) as { upstream: string }).upstream).toBe(`127.0.0.1:${port}/demo`);
    const { PGWARDEN_UPSTREAM_PORT: _, ...withoutPort } = testEnv();
    const none = check(['--config', config, '--user', 'alice', 'select 1'], withoutPort);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain(
      'databases.demo.url: environment variable PGWARDEN_UPSTREAM_PORT is not set',
    );
  });

  test('dba: both allowed, unmasked', () => {
    const a = checkJson('dba', 'select id, email from users');
    expect(a.code).toBe(0);
    expect(a.report.verdict).toBe('allowed');
    expect(a.report.statements[0]?.columns.map((c) => c.masked)).toEqual([false, false]);
    const b = checkJson('dba', "select id from users where email like 'a%'");
    expect(b.code).toBe(0);
    expect(b.report.verdict).toBe('allowed');
  });

  test('the text report: an aligned table, no colour when piped', () => {
    const r = check(['--config', config, '--user', 'alice', 'select id, email from users']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\u001b[');
    const { port } = inject('pg');
    expect(r.stdout.split('\n').slice(0, 2)).toEqual([
      'user alice · role analyst · database demo · proxified',
      `catalog read from 127.0.0.1:${port}/demo`,
    ]);
    expect(r.stdout).toContain('ALLOWED WITH MASKS (email (column 2) masked)');
    expect(r.stdout).toContain(
      [
        '  #  column  lineage             shown',
        '  1  id      public.users.id     yes',
        '  2  email   public.users.email  masked',
      ].join('\n'),
    );
    expect(r.stdout).toMatch(/SEE\s+demo\.public\.users\.email\s+hidden\s+roles\.analyst\.permissions\[1\]/);

    const refused = check([
      '--config',
      config,
      '--user',
      'alice',
      "select id from users where email like 'a%'",
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toContain(
      'REFUSED  42501  column users.email is hidden from you and cannot be tested in WHERE',
    );
    expect(refused.stdout).toContain("  LINE:   select id from users where email like 'a%'\n");
    expect(refused.stdout).toContain(`${' '.repeat(10)}${' '.repeat(27)}^`);
    expect(refused.stdout).toContain(
      'HINT:   To ask only whether rows exist, write EXISTS (SELECT 1 FROM …)',
    );
  });

  test('bob: a write reading a hidden column is refused; several statements are each reported', () => {
    const { code, report } = checkJson(
      'bob',
      "begin; update users set name = 'x' where id = 1 returning email; commit",
    );
    expect(code).toBe(0);
    expect(report.statements.map((s) => s.verdict)).toEqual(['allowed', 'allowed with masks', 'allowed']);
    const del = checkJson('bob', 'delete from orders');
    expect(del.code).toBe(1);
    expect(del.report.refusal?.message).toBe(
      'permission denied for table orders: no rule of your roles allows DELETE on it',
    );
  });

  test('a named role the user may not use is refused at connect (28000), exit 1', () => {
    const { code, report } = checkJson('alice', 'select 1', ['--role', 'dba']);
    expect(code).toBe(1);
    expect(report.refusal).toMatchObject({
      sqlstate: '28000',
      message: 'user "alice" may not use role "dba"',
    });
    // A workspace admin may name any role.
    const admin = checkJson('dba', 'select id, email from users', ['--role', 'analyst']);
    expect(admin.report.roles).toEqual(['analyst']);
    expect(admin.report.statements[0]?.mask).toEqual([1]);
  });

  test('usage and config errors exit 2', () => {
    expect(check(['--config', config, '--user', 'mallory', 'select 1']).code).toBe(2);
    expect(check(['--config', config, '--user', 'alice', '--database', 'nope', 'select 1']).code).toBe(2);
    expect(check(['--config', path.join(dir, 'missing.yaml'), '--user', 'alice', 'select 1']).code).toBe(2);
    const bad = demoConfigObject();
    bad.default_role = 'admin';
    const r = check(['--config', writeConfig(bad, 'bad.yaml'), '--user', 'alice', 'select 1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('pgwarden has no built-in admin role');
  });

  test('a syntax error is refused with its position', () => {
    const { code, report } = checkJson('dba', 'selec 1');
    expect(code).toBe(1);
    expect(report.refusal?.sqlstate).toBe('42601');
  });
});

// The check report: aligned tables, colour only when asked, JSON fields, exit codes.
import { beforeAll, describe, expect, test } from 'vitest';
import { alignedTable, paint } from '../../../src/policy/aligned-table.js';
import {
  type CheckReport,
  checkExitCode,
  checkJson,
  renderCheckText,
} from '../../../src/policy/check-report.js';
import { decide } from '../../../src/policy/decide.js';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';
import { denySee, makeConfig } from './policy-fixtures.js';

const config = makeConfig({
  roles: {
    analyst: {
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
        denySee('public.users.email'),
      ],
    },
  },
});

function report(sql: string): CheckReport {
  const catalog = loadDemoCatalog();
  const analysis = analyze(sql, { catalog, searchPath: ['public'] });
  const decision = decide(analysis, ['analyst'], {
    config,
    catalog,
    database: 'demo',
    connection: 'proxified',
  });
  return {
    config,
    user: 'alice',
    roles: ['analyst'],
    database: 'demo',
    connection: 'proxified',
    sql,
    analysis,
    decision,
  };
}

beforeAll(async () => {
  await loadParser(15);
});

describe('check report', () => {
  test('alignedTable pads every column to its widest cell, ignoring colour codes', () => {
    expect(
      alignedTable(
        [
          ['a', 'bb', 'c'],
          [paint('xxx', 'red', true), 'y', 'z'],
        ],
        '  ',
      ),
    ).toBe(`  a    bb  c\n  ${paint('xxx', 'red', true)}  y   z\n`);
    expect(paint('x', 'green', false)).toBe('x');
  });

  test('colour only when asked (a terminal), none otherwise', () => {
    const r = report('select id, email from users');
    expect(renderCheckText(r, false)).not.toContain('\u001b[');
    const coloured = renderCheckText(r, true);
    expect(coloured).toContain('\u001b[33mALLOWED WITH MASKS\u001b[0m');
    expect(coloured).toContain('\u001b[33mmasked\u001b[0m');
  });

  test('exit code and JSON: allowed with masks → 0; refused → 1 with the rule path', () => {
    const ok = report('select id, email from users');
    expect(checkExitCode(ok)).toBe(0);
    expect(checkJson(ok)).toMatchObject({
      verdict: 'allowed with masks',
      statements: [{ verdict: 'allowed with masks', mask: [1], redactErrors: true }],
    });
    const bad = report("select id from users where email = 'x'");
    expect(checkExitCode(bad)).toBe(1);
    expect(checkJson(bad)).toMatchObject({
      verdict: 'refused',
      refusal: { sqlstate: '42501', rule: 'roles.analyst.permissions[1]', position: 28 },
    });
  });

  test('a refusal at connect is reported as such and exits 1', () => {
    const r: CheckReport = {
      config,
      user: 'carol',
      roles: [],
      database: 'demo',
      connection: 'proxified',
      sql: 'select 1',
      connectRefusal: { sqlstate: '28000', message: 'no role: user "carol" is a tenant of no role' },
    };
    expect(checkExitCode(r)).toBe(1);
    expect(renderCheckText(r, false)).toContain(
      'REFUSED  28000  no role: user "carol" is a tenant of no role (at connect)',
    );
    expect(checkJson(r)).toMatchObject({ verdict: 'refused', refusedAtConnect: true });
  });

  test('a refusal with a position shows the line and a caret under the offending reference', () => {
    const text = renderCheckText(report("select id\nfrom users\nwhere email = 'x'"), false);
    expect(text).toContain(`    LINE:   where email = 'x'\n${' '.repeat(12 + 6)}^\n`);
  });
});

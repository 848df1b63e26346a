// decide() on real SQL: analyze() with the demo catalog fixture, then the demo policy (alice, bob, dba).
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { DEMO_DIR } from '../../../src/embedded/demo.js';
import { parseConfig } from '../../../src/policy/config-load.js';
import type { Config } from '../../../src/policy/config-schema.js';
import { decide } from '../../../src/policy/decide.js';
import { DecisionCache } from '../../../src/policy/decision-cache.js';
import type { Decision } from '../../../src/policy/decision-types.js';
import { findPrincipal } from '../../../src/policy/principals.js';
import { resolveRoles } from '../../../src/policy/resolve-roles.js';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';
import { denySee } from './policy-fixtures.js';

const catalog = loadDemoCatalog();

/** The demo config, with the fixture's extra tables hidden the same way (user_secrets.ssn, badges.code). */
function demoConfig(): Config {
  const raw = YAML.parse(fs.readFileSync(path.join(DEMO_DIR, 'pgwarden.yaml'), 'utf8')) as {
    roles: Record<string, { permissions: unknown[] }>;
  };
  for (const role of ['analyst', 'support']) {
    raw.roles[role]!.permissions.push(denySee('public.user_secrets.ssn'), denySee('public.badges.code'));
  }
  return parseConfig(YAML.stringify(raw), path.join(DEMO_DIR, 'pgwarden.yaml'), {
    PGWARDEN_UPSTREAM_PASSWORD: 'x',
    PGWARDEN_UPSTREAM_PORT: '5432',
  }).config;
}

let config: Config;
beforeAll(async () => {
  await loadParser(15);
  config = demoConfig();
});

function rolesOf(user: string): string[] {
  const p = findPrincipal(config, user, Date.now());
  if (!p) throw new Error(`no user ${user}`);
  const r = resolveRoles(config, p, {});
  if (!r.ok) throw new Error(r.message);
  return r.roles;
}

function check(user: string, sql: string): Decision {
  const analysis = analyze(sql, { catalog, searchPath: ['public'] });
  return decide(analysis, rolesOf(user), { config, catalog, database: 'demo', connection: 'proxified' });
}

function masks(d: Decision): number[][] {
  expect(d.refusal).toBeUndefined();
  return d.statements.map((s) => (s.verdict === 'allow' ? [...s.mask] : []));
}

describe('the demo policy on real SQL', () => {
  test('the demo users resolve to their roles', () => {
    expect(rolesOf('alice')).toEqual(['analyst']);
    expect(rolesOf('bob')).toEqual(['support']);
    expect(rolesOf('dba')).toEqual(['dba']);
  });

  test('alice: select id, email from users masks column 2; dba sees it', () => {
    expect(masks(check('alice', 'select id, email from users'))).toEqual([[1]]);
    expect(masks(check('dba', 'select id, email from users'))).toEqual([[]]);
    expect(masks(check('alice', 'select * from users'))).toEqual([[2, 3]]);
  });

  test("alice: select id from users where email like 'a%' is refused naming users.email and WHERE; dba allowed", () => {
    const d = check('alice', "select id from users where email like 'a%'");
    expect(d.refusal).toMatchObject({
      sqlstate: '42501',
      message: 'column users.email is hidden from you and cannot be tested in WHERE',
      position: 28,
      rule: { role: 'analyst', index: 1 },
    });
    expect(d.refusal?.detail).toContain('roles.analyst.permissions[1] (deny SEE on demo.public.users.email)');
    expect(masks(check('dba', "select id from users where email like 'a%'"))).toEqual([[]]);
  });

  test.each([
    ['select lower(email) from users', 'cannot be read in function lower'],
    ['select id from users order by email', 'cannot be tested in ORDER BY'],
    ['select email, count(*) from users group by email', 'cannot be tested in GROUP BY'],
    ['select distinct email from users', 'cannot be tested in DISTINCT'],
    ["select email from users union select 'x'", 'cannot be tested in a set operation'],
    ["select s.e from (select email as e from users) s where s.e = 'x'", 'cannot be tested in WHERE'],
    [
      'select id from users u where exists (select 1 from users c where c.email = u.email)',
      'cannot be tested in WHERE',
    ],
    [
      'select u.id from users u join orgs o on o.secret = u.name',
      'orgs.secret is hidden from you and cannot be tested in JOIN ON',
    ],
    ['select (select email from users limit 1)', 'cannot be read in scalar subquery'],
    [
      'select row_number() over (order by ssn) from users',
      'users.ssn is hidden from you and cannot be tested in',
    ],
  ])('alice: %s is refused (%s)', (sql, fragment) => {
    expect(check('alice', sql).refusal?.message).toContain(fragment);
  });

  test('whole-row use of a table with hidden columns is refused', () => {
    expect(check('alice', 'select u from users u').refusal?.message).toBe(
      'table users has columns hidden from you (email, ssn) and cannot be used as a whole row',
    );
    expect(masks(check('alice', 'select o from orders o'))).toEqual([[]]);
  });

  test('a literal, a count or a window function beside a hidden column is not refused', () => {
    expect(masks(check('alice', 'select 1, email, count(*) over () from users'))).toEqual([[1]]);
  });

  test('a hidden column handed up by a derived table, a CTE or a view stays masked', () => {
    expect(masks(check('alice', 'select e from (select email as e from users) s'))).toEqual([[0]]);
    expect(masks(check('alice', 'with c as (select email from users) select * from c'))).toEqual([[0]]);
    expect(masks(check('alice', 'select id, email from user_emails'))).toEqual([[1]]);
    expect(masks(check('alice', 'select email from users union all select secret from orgs'))).toEqual([[0]]);
  });

  test('a generated column over a hidden column is hidden too (never shown unmasked, never tested)', () => {
    // The analysis reports the generation expression's reads as compute uses of ssn, so selecting
    // ssn_last4 is refused outright; decide() would otherwise mask it (hidden-columns.ts).
    const d = check('alice', 'select user_id, ssn_last4 from user_secrets');
    const s = d.statements[0];
    expect(d.refusal !== undefined || (s?.verdict === 'allow' && s.mask.includes(1))).toBe(true);
    expect(
      check('alice', "select user_id from user_secrets where ssn_last4 = '1234'").refusal?.message,
    ).toMatch(/^column user_secrets\.ssn(_last4)? is hidden from you/);
    expect(masks(check('dba', 'select user_id, ssn_last4 from user_secrets'))).toEqual([[]]);
  });

  test('bob: writing a hidden column is allowed and RETURNING is masked; reading one into a write is refused', () => {
    expect(masks(check('bob', "update users set email = 'x' where id = 1 returning id, email"))).toEqual([
      [1],
    ]);
    expect(masks(check('bob', "insert into users (id, name, email) values (9, 'n', 'e')"))).toEqual([[]]);
    expect(check('bob', 'insert into orders (id, note) select id, email from users').refusal?.message).toBe(
      'column users.email is hidden from you and cannot be read in INSERT … SELECT',
    );
    expect(check('bob', "update users set name = 'x' where email = 'y'").refusal?.message).toBe(
      'column users.email is hidden from you and cannot be tested in WHERE',
    );
  });

  test('bob: writes as reads — a hidden unique column, directly or through ON CONFLICT without a target', () => {
    expect(check('bob', "insert into badges (id, code) values (1, 'x')").refusal?.message).toMatch(
      /^column badges\.code is hidden from you and cannot be written: it is under a unique constraint/,
    );
    expect(
      check('bob', "insert into badges (id, label) values (1, 'x') on conflict do nothing").refusal?.message,
    ).toBe('column badges.code is hidden from you and cannot be tested in ON CONFLICT');
    expect(masks(check('bob', "insert into badges (id, label) values (1, 'x')"))).toEqual([[]]);
  });

  test('bob has no DELETE: default deny', () => {
    expect(check('bob', 'delete from orders where id = 1').refusal?.message).toBe(
      'permission denied for table orders: no rule of your roles allows DELETE on it',
    );
  });

  test('CTAS and CREATE VIEW need MANAGE and SELECT', () => {
    expect(check('alice', 'create table x as select id from users').refusal?.message).toBe(
      'permission denied for database demo: CREATE TABLE AS needs MANAGE, and no rule of your roles allows it',
    );
    expect(masks(check('dba', 'create table x as select * from users'))).toEqual([[]]);
    expect(masks(check('dba', 'create view v as select id from users'))).toEqual([[]]);
    expect(check('alice', 'create view v as select id from users').refusal?.message).toMatch(/needs MANAGE/);
  });

  test('SELECT t1.c2 FROM t1, t2 needs SELECT on both tables', () => {
    const d = check('dba', 'select users.name from users, orgs');
    const objects = d.statements[0]?.checks.filter((c) => c.action === 'SELECT').map((c) => c.object);
    expect(objects).toEqual(expect.arrayContaining(['demo.public.users', 'demo.public.orgs']));
  });

  test('functions and catalog relations outside the allowlists, and LISTEN, need MANAGE', () => {
    expect(check('alice', "select pg_read_file('x')").refusal?.message).toMatch(/needs MANAGE/);
    expect(check('alice', 'select * from pg_stats').refusal?.message).toMatch(/needs MANAGE/);
    expect(check('alice', 'listen foo').refusal?.message).toMatch(/LISTEN needs MANAGE/);
    expect(masks(check('alice', 'select relname from pg_class'))).toEqual([[]]);
  });

  test('session control needs nothing; each statement of a string is decided', () => {
    expect(
      masks(check('alice', 'begin; set search_path = public; select id, email from users; commit')),
    ).toEqual([[], [], [1], []]);
    const d = check('alice', 'select id from users; select email from users where ssn is null');
    expect(d.statements.map((s) => s.verdict)).toEqual(['allow', 'refuse']);
  });

  test('an analysis refusal passes through (unknown column, syntax error)', () => {
    expect(check('dba', 'select nope from users').refusal?.sqlstate).toBe('42703');
    expect(check('dba', 'selec 1').refusal).toMatchObject({ sqlstate: '42601' });
  });

  test('the decision cache serves the same decision, and a reload (new Config) decides again', () => {
    const cache = new DecisionCache();
    const analysis = analyze('select id, email from users', { catalog, searchPath: ['public'] });
    const ctx = { config, catalog, database: 'demo', connection: 'proxified' as const };
    const a = cache.decide(analysis, ['analyst'], ctx);
    expect(cache.decide(analysis, ['analyst'], ctx)).toBe(a);
    expect(cache.size).toBe(1);
    const reloaded = demoConfig();
    reloaded.roles.analyst!.permissions.push({
      effect: 'allow',
      actions: ['SEE'],
      database: 'demo',
      schema: 'public',
      table: 'orgs',
    });
    const b = cache.decide(analysis, ['analyst'], { ...ctx, config: reloaded });
    expect(b).not.toBe(a);
    expect(cache.size).toBe(2);
    expect(cache.decide(analysis, ['dba'], ctx)).not.toBe(a);
  });
});

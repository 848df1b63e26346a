// normalizeForAudit: literals become numbered placeholders after the text's own parameters, typed literals casts, and the text parses again.
import { beforeAll, describe, expect, test } from 'vitest';
import { AUDIT_TEXT_MAX, normalizeForAudit } from '../../../src/proxy/audit-normalize.js';
import { loadParser, type PgParser } from '../../../src/sql/parser.js';

let parser: PgParser;
beforeAll(async () => {
  parser = await loadParser(15);
});

describe('normalizeForAudit', () => {
  test.each([
    [
      "select * from users where email like 'a%' and id > 10 limit 5",
      'select * from users where email like $1 and id > $2 limit $3',
    ],
    ["select $1, $2 from t where a = 'x'", 'select $1, $2 from t where a = $3'],
    [
      "select interval '1 day', date '2020-01-01', E'x\\'y', x'ff', 1.5e3",
      'select $1::interval, $2::date, $3, $4, $5',
    ],
    ["select a ? 'k' from t -- a comment 'quoted'", 'select a ? $1 from t'],
    [
      "select $tag$ secret $tag$, 'it''s' from t where id in (1, 2)",
      'select $1, $2 from t where id in ($3, $4)',
    ],
    ['select "col 1", t2.c3 from t2', 'select "col 1", t2.c3 from t2'],
    ["select 'unterminated", '[unterminated]'],
    // psql's \d+ of a view: a keyword before a string constant is not its type.
    [
      "SELECT r.rulename, trim(trailing ';' from pg_catalog.pg_get_ruledef(r.oid, true)) FROM pg_catalog.pg_rewrite r WHERE r.ev_class = '16438' AND r.rulename != '_RETURN' ORDER BY 1",
      'SELECT r.rulename, trim(trailing $1 from pg_catalog.pg_get_ruledef(r.oid, true)) FROM pg_catalog.pg_rewrite r WHERE r.ev_class = $2 AND r.rulename != $3 ORDER BY 1',
    ],
    [
      "select now() at time zone 'UTC', overlay('abc' placing 'x' from 2), x between symmetric 'a' and 'b'",
      'select now() at time zone $1, overlay($2 placing $3 from $4), x between symmetric $5 and $6',
    ],
    [
      "select timestamp with time zone '2020-01-01 00:00+00', time without time zone '10:00', double precision '1.5', character varying 'x'",
      'select $1::timestamp with time zone, $2::time without time zone, $3::double precision, $4::character varying',
    ],
  ])('%s', (sql, want) => {
    expect(normalizeForAudit(sql)).toBe(want);
  });

  test('the normalized text parses with the real parser (what replay needs)', () => {
    for (const sql of [
      "select id from users where email = 'a@b' and created_at > date '2024-01-01' + interval '3 days'",
      "update users set name = 'x' where id = 4 returning id",
      "insert into orgs (id, name) values (7, 'n') on conflict do nothing",
      "select trim(both 'x' from name), trim(leading ' ' from name), substring(name for 2) from users",
      "create table t (a text default 'x', b timestamp with time zone default timestamp with time zone '2020-01-01')",
      "set time zone 'UTC'",
    ]) {
      const n = normalizeForAudit(sql);
      expect(n).not.toMatch(/'|(?<!\$)\b[0-9]/);
      expect(parser.parse(n).ok).toBe(true);
    }
  });

  test('a huge statement is cut at AUDIT_TEXT_MAX between tokens, fast, and the line says so', () => {
    const sql = Buffer.from(`SELECT ${"a, 'secret', ".repeat(2_000_000)}a`).toString();
    const t = performance.now();
    const n = normalizeForAudit(sql);
    // About 0.8 s here; a quadratic scan of 2 million literals would take hours. Slack for a loaded machine.
    expect(performance.now() - t).toBeLessThan(10_000);
    // Each literal is one mark while scanning, numbered after: `$123456` at most seven times longer.
    expect(n.length).toBeLessThan(7 * AUDIT_TEXT_MAX);
    expect(n.startsWith('SELECT a, $1, a, $2, a, $3,')).toBe(true);
    expect(n.endsWith(` [truncated: ${sql.length} characters in all]`)).toBe(true);
    expect(n).not.toContain('secret');
  });

  test('a typed literal after a long text still becomes a cast of its placeholder', () => {
    const sql = `select ${'x, '.repeat(5000)}interval '1 day', e'\\n', b'01'`;
    expect(normalizeForAudit(sql).endsWith('x, $1::interval, $2, $3')).toBe(true);
  });
});

describe('ordinals stay (PostgreSQL resolves them to select-list entries; pg_stat_statements keeps them too)', () => {
  test.each([
    ['select a, b from t order by 2', 'select a, b from t order by 2'],
    [
      'select a, b from t order by 2 desc, 1 nulls first limit 5',
      'select a, b from t order by 2 desc, 1 nulls first limit $1',
    ],
    [
      'select a, count(*) from t group by 1 having count(*) > 3',
      'select a, count(*) from t group by 1 having count(*) > $1',
    ],
    ['select a, b from t order by a, 2', 'select a, b from t order by a, 2'],
    [
      'select (select x from u order by 1) from t order by 1',
      'select (select x from u order by 1) from t order by 1',
    ],
    ['select a from t order by 1;select 2', 'select a from t order by 1;select $1'],
  ])('%s', (sql, audited) => {
    expect(normalizeForAudit(sql)).toBe(audited);
  });

  test.each([
    // Constant expressions and values after the list are values.
    ['select a from t order by 1 + a', 'select a from t order by $1 + a'],
    ['select a from t order by 1.5', 'select a from t order by $1'],
    ['select a from t order by a limit 1, 2', 'select a from t order by a limit $1, $2'],
    ['select a from t order by f(a, 2)', 'select a from t order by f(a, $1)'],
    ['select a from t where a in (1, 2) order by a', 'select a from t where a in ($1, $2) order by a'],
    ['select 1, 2', 'select $1, $2'],
  ])('%s', (sql, audited) => {
    expect(normalizeForAudit(sql)).toBe(audited);
  });
});

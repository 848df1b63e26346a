// Unit tests of analyzeQuery's contract: locations, refusals, view caching, and its time budget.
import { loadModule } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyzeQuery } from '../../../../src/sql/query/analyze-query.js';
import { loadDemoCatalog } from '../../../fixtures/demo-catalog.js';
import { analyzeDemo as analyze, parseQuery as parse } from './demo-query.js';

beforeAll(async () => {
  await loadModule();
});

/** A ~400-character statement: a CTE, joins, a correlated subquery, grouping and ordering. */
const BENCH_SQL = `WITH recent AS (SELECT o.user_id, sum(o.amount) AS total, max(o.id) AS last_id FROM orders o
 WHERE o.amount > 10 GROUP BY o.user_id) SELECT u.id, u.name, g.name AS org, r.total,
 (SELECT count(*) FROM orders x WHERE x.user_id = u.id) AS n FROM users u JOIN orgs g ON g.id = u.org_id
 LEFT JOIN recent r ON r.user_id = u.id WHERE u.name LIKE 'A%' AND r.total IS NOT NULL ORDER BY r.total DESC, u.id LIMIT 20`;

describe('analyzeQuery', () => {
  it('reports byte offsets of the reference as libpg-query gives them', () => {
    const r = analyze("SELECT 'é', email FROM users WHERE ssn = 'x'");
    const test = r.uses.find((u) => u.use === 'test');
    expect(test?.location).toBe(Buffer.from("SELECT 'é', email FROM users WHERE ").length);
  });

  it('refuses an unknown column with 42703 and its location', () => {
    const r = analyze('SELECT id, nope FROM users');
    expect(r.refusal).toMatchObject({ sqlstate: '42703', location: 11 });
  });

  it('refuses u.to_json (a function call to Postgres) with 42703 and a hint', () => {
    const r = analyze('SELECT u.to_json FROM users u');
    expect(r.refusal?.sqlstate).toBe('42703');
    expect(r.refusal?.hint).toContain('to_json(u)');
  });

  it('reports a use inside a view at the view reference', () => {
    const sql = 'SELECT full_name FROM user_directory';
    const r = analyze(sql);
    const inner = r.uses.filter((u) => u.use !== 'output');
    expect(inner.length).toBeGreaterThan(0);
    expect(inner.every((u) => u.location === sql.indexOf('user_directory'))).toBe(true);
    expect(r.uses.find((u) => u.use === 'output')?.location).toBe(sql.indexOf('full_name'));
  });

  it('records functions with their catalog OIDs and catalog relations read', () => {
    const r = analyze('SELECT lower(relname) FROM pg_class');
    expect(r.functions[0]).toMatchObject({ schema: 'pg_catalog', name: 'lower' });
    expect(r.functions[0]?.oid).toBeGreaterThan(0);
    expect(r.catalogRelations).toEqual(['pg_catalog.pg_class']);
  });

  it('resolves through the given search path', () => {
    expect(analyze('SELECT handle FROM users', ['app', 'public']).refusal).toBeUndefined();
    expect(analyze('SELECT handle FROM users', ['public']).refusal?.sqlstate).toBe('42703');
  });

  it('refuses a node kind without a rule (0A000), never passes it', () => {
    const [k, node] = parse('SELECT id FROM users WHERE id = 1');
    const bad = JSON.parse(JSON.stringify(node).replace('"A_Expr"', '"AlterTableStmt"'));
    expect(
      analyzeQuery(k, bad, { catalog: loadDemoCatalog(), searchPath: ['public'] }).refusal?.sqlstate,
    ).toBe('0A000');
  });

  // Timing lives in bench/ (bench/analysis): tests assert values, not speed.
  it('analyzes a ~400-character CTE with joins', () => {
    const [k, node] = parse(BENCH_SQL);
    const ctx = { catalog: loadDemoCatalog(), searchPath: ['public'] };
    const r = analyzeQuery(k, node, ctx);
    expect(r.refusal).toBeUndefined();
    expect(r.resultColumns.map((c) => c.name)).toEqual(['id', 'name', 'org', 'total', 'n']);
  });
});

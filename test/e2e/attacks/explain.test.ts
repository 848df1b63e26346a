// EXPLAIN as a side channel: plans that measure or estimate hidden values are refused.
// Corpus: corpus/attacks/explain.yaml.
import { describe, expect, test } from 'vitest';
import { outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice'] });
const { users } = fx;

describe('EXPLAIN ANALYZE measures hidden values', () => {
  test('sort memory of a masked column answers its length and nullness', async () => {
    const plan = async (id: number) =>
      (
        await outcome(
          users.alice,
          `explain (analyze, costs off, timing off) select u.id, u.email from users u, generate_series(1, 20000) g where u.id = ${id} order by g`,
        )
      ).code;
    // Today: allowed, and "Sort Method: quicksort  Memory: 2175kB" (id 1, 21 characters) vs
    // 1706kB (id 7, NULL) vs 2331kB (id 6, 27 characters).
    expect(await plan(1)).toBe('42501');
    expect(await plan(7)).toBe('42501');
  });
});

describe('EXPLAIN without ANALYZE', () => {
  test('width= is pg_statistic.avg_width of a hidden column (pg_stats itself needs MANAGE)', async () => {
    const dba = await fx.proxy.client('dba');
    try {
      await dba.query('analyze users');
    } finally {
      await dba.end();
    }
    expect(
      (await outcome(users.alice, "select avg_width from pg_stats where tablename = 'users'")).code,
    ).toBe('42501');
    const r = await outcome(users.alice, 'explain select email from users');
    // Today: "Seq Scan on users  (cost=0.00..1.15 rows=15 width=24)" — 24 is email's average width.
    const plan = JSON.stringify(r.rows);
    expect(r.code === '42501' || !/width=(?!0\b)\d+/.test(plan)).toBe(true);
  });
});

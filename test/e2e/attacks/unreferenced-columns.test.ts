// Computed columns nobody references: Postgres still evaluates those of a materialized CTE, so they are error oracles.
// Corpus: corpus/attacks/unreferenced-columns.yaml.
import { describe, expect, test } from 'vitest';
import { inRollback, outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice', 'bob'] });
const { users } = fx;

describe('a computed CTE column that is never referenced is still evaluated (error oracle)', () => {
  // Postgres drops an unreferenced output of a subquery it flattens, but a materialized CTE
  // (explicit, referenced twice, recursive, or a data-modifying one) computes its whole target
  // list. The deferred uses of that column are never replayed, so the statement is allowed and
  // 22012 vs success answers "is length(ssn) = 11" / "does ssn start with 901".
  test('WITH … AS MATERIALIZED: division by zero answers a LIKE on users.ssn', async () => {
    const hit = await outcome(
      users.alice,
      "with s as materialized (select id, 1/(case when ssn like '901%' then 0 else 1 end) as x from users) select id from s",
    );
    const miss = await outcome(
      users.alice,
      "with s as materialized (select id, 1/(case when ssn like '999%' then 0 else 1 end) as x from users) select id from s",
    );
    expect(hit.code).toBe('42501');
    expect(miss.code).toBe('42501');
  });

  test('a CTE referenced twice is materialized: length(ssn) oracle', async () => {
    const r = await outcome(
      users.alice,
      'with s as (select id, 1/(length(ssn)-11) as x from users) select a.id from s a, s b where a.id = b.id',
    );
    expect(r.code).toBe('42501');
  });

  test('WITH RECURSIVE base term: length(ssn) oracle', async () => {
    const r = await outcome(
      users.alice,
      'with recursive s(id, x) as (select id, 1/(length(ssn)-11) from users union all select id + 100, x from s where id < 0) select id from s',
    );
    expect(r.code).toBe('42501');
  });

  test('data-modifying CTE: RETURNING expression over users.ssn (bob)', async () => {
    const r = await inRollback(
      users.bob,
      'with w as (update users set name = name where id = 1 returning id, 1/(length(ssn)-11) as x) select id from w',
    );
    expect(r.code).toBe('42501');
  });
});

describe('an unreferenced column that Postgres drops', () => {
  const refusedForAlice: string[] = [
    'select id from (select id, 1/(length(ssn)-11) as x from users group by id, ssn) s',
  ];
  for (const sql of refusedForAlice) {
    test(`alice: ${sql}`, async () => {
      expect((await outcome(users.alice, sql)).code).toBe('42501');
    });
  }

  test('alice: an unreferenced computed column of a flattened subquery is no oracle', async () => {
    // Postgres removes it (remove_unused_subquery_outputs): allowed or refused, never 22012.
    for (const shape of [
      'select id from (select id, 1/(length(ssn)-N) as x from users offset 0) s',
      'select id from (select id, 1/(length(ssn)-N) as x from users union all select 1, 1) s',
    ]) {
      const hit = await outcome(users.alice, shape.replace('N', '11'));
      const miss = await outcome(users.alice, shape.replace('N', '12'));
      expect(hit.code).not.toBe('22012');
      expect(hit.code).toBe(miss.code);
    }
  });
});

// Unit tests of the rules Postgres binds names by (issue 13): whole rows through merges, GROUP BY levels, WITH RECURSIVE scoping, plan reads, bound columns.
import { loadModule } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { recursiveWithOrder, referencesName } from '../../../../src/sql/query/cte-dependencies.js';
import { analyzeDemo as analyze, parseQuery as parse } from './demo-query.js';

beforeAll(async () => {
  await loadModule();
});

function uses(sql: string): string[] {
  const r = analyze(sql);
  if (r.refusal) return [`refused ${r.refusal.sqlstate}`];
  return [
    ...new Set(
      r.uses.map((u) =>
        u.use === 'whole-row'
          ? `whole-row ${u.table}`
          : `${u.use}${u.use === 'test' ? ` ${u.clause}` : ''} ${u.table}.${u.column}`,
      ),
    ),
  ].sort();
}

/** The CTE items of the first WITH in `sql`, for the dependency walk. */
function withItems(sql: string) {
  const [, node] = parse(sql);
  const w = (node as { withClause: { ctes: { CommonTableExpr: { ctename: string; ctequery: unknown } }[] } })
    .withClause;
  return w.ctes.map((c, i) => ({
    name: c.CommonTableExpr.ctename,
    query: c.CommonTableExpr.ctequery,
    location: i,
  }));
}

describe('whole rows survive every merge of rows', () => {
  it('UNION ALL: a field of the merged row is the field of each branch row', () => {
    expect(
      uses('SELECT (x).ssn FROM (SELECT u AS x FROM users u UNION ALL SELECT u FROM users u) s'),
    ).toEqual(['output users.ssn']);
  });
  it('a branch NULL::users adds nothing and drops nothing', () => {
    expect(uses('SELECT x FROM (SELECT NULL::users AS x UNION ALL SELECT u FROM users u) s')).toEqual([
      'whole-row users',
    ]);
  });
  it('VALUES rows', () => {
    expect(uses('SELECT (v.column1).email FROM users u, LATERAL (VALUES (u), (NULL::users)) v')).toEqual([
      'output users.email',
    ]);
  });
  it('a recursive CTE whose row column only the recursive term fills: the fixpoint compares rows', () => {
    expect(
      uses(
        'WITH RECURSIVE t(n, r) AS (SELECT 1, NULL::users UNION ALL SELECT n + 1, u FROM t, users u WHERE n < 2) SELECT (r).ssn FROM t',
      ),
    ).toEqual(['output users.ssn']);
  });
  it('tested through the merge', () => {
    expect(
      uses(
        "SELECT 1 FROM (SELECT u AS x FROM users u UNION ALL SELECT u FROM users u) s WHERE (x).ssn = 'a'",
      ),
    ).toEqual(['test WHERE users.ssn']);
  });
});

describe('names resolve at the level Postgres uses', () => {
  it('GROUP BY: an output alias here wins over a column of an outer query', () => {
    expect(
      uses('SELECT (SELECT i.s AS name FROM (SELECT ssn AS s FROM users) i GROUP BY name LIMIT 1) FROM orgs'),
    ).toContain('test GROUP BY users.ssn');
  });
  it('GROUP BY: an input column here wins over an output alias', () => {
    expect(uses('SELECT ssn AS name FROM users GROUP BY name')).toEqual([
      'output users.ssn',
      'test GROUP BY users.name',
    ]);
  });
  it('GROUP BY: an outer column when neither an input column nor an alias here has the name', () => {
    expect(
      uses('SELECT (SELECT count(*) FROM (SELECT ssn AS s FROM users) i GROUP BY name) FROM orgs'),
    ).toEqual(['test GROUP BY orgs.name']);
  });
  it('ORDER BY and DISTINCT ON: the output alias first; window ORDER BY and HAVING: input columns', () => {
    expect(uses('SELECT ssn AS name FROM users ORDER BY name')).toContain('test ORDER BY users.ssn');
    expect(uses('SELECT DISTINCT ON (name) ssn AS name FROM users')).toContain('test DISTINCT users.ssn');
    expect(uses('SELECT ssn AS name, rank() OVER (ORDER BY name) FROM users')).toContain(
      'test WINDOW users.name',
    );
    expect(uses('SELECT name AS ssn FROM users GROUP BY name HAVING min(ssn) > 0::text')).toContain(
      'test HAVING users.ssn',
    );
  });
});

describe('WITH RECURSIVE scopes as Postgres scopes it', () => {
  it('every item sees every other: a later item named like a table is that item', () => {
    expect(
      uses(
        'WITH RECURSIVE a AS (SELECT name FROM users), users AS (SELECT ssn AS name FROM public.users) SELECT name FROM a',
      ),
    ).toEqual(['output users.ssn']);
    expect(
      uses(
        'WITH a AS (SELECT name FROM users), users AS (SELECT ssn AS name FROM public.users) SELECT name FROM a',
      ),
    ).toEqual(['output users.name']);
  });
  it('a recursive CTE whose body holds its own WITH is still recursive', () => {
    expect(
      uses(
        "WITH RECURSIVE orders(a, b) AS (WITH w AS (SELECT 1) SELECT 'x'::text, ssn FROM users UNION ALL SELECT b, b FROM orders WHERE false) SELECT a FROM orders",
      ),
    ).toEqual(['output users.ssn']);
  });
  it('orders items by dependency, marks self-references, and sees inner WITHs capture names', () => {
    const o = recursiveWithOrder(
      withItems('WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1 UNION ALL SELECT 1 FROM b) SELECT 1'),
    );
    expect(o.order).toEqual([1, 0]);
    expect([...o.selfReferencing]).toEqual([1]);
    const [shadowed] = withItems('WITH RECURSIVE t AS (WITH t AS (SELECT 1) SELECT * FROM t) SELECT 1');
    expect(referencesName(shadowed?.query, 't')).toBe(false);
    const [later] = withItems(
      'WITH RECURSIVE t AS (WITH a AS (SELECT * FROM t), t AS (SELECT 1) SELECT 1) SELECT 1',
    );
    expect(referencesName(later?.query, 't')).toBe(true);
  });
  it('refuses what Postgres refuses: a reference in the base term, mutual recursion', () => {
    expect(uses('WITH RECURSIVE t AS (SELECT * FROM t UNION ALL SELECT 1) SELECT 1 FROM t')).toEqual([
      'refused 42P19',
    ]);
    expect(uses('WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT 1')).toEqual([
      'refused 0A000',
    ]);
  });
});

describe('plan reads and bound columns', () => {
  it('plan reads include a materialized CTE output nobody references and what a view body reads', () => {
    const r = analyze('WITH c AS MATERIALIZED (SELECT ssn FROM users) SELECT count(*) FROM c');
    expect(r.planReads.map((c) => c.column)).toEqual(['ssn']);
    const v = analyze('SELECT count(*) FROM user_emails');
    expect(v.planReads.map((c) => c.column).sort()).toEqual(['email', 'id']);
  });
  it('bound columns are the Vars Postgres makes: a star (in ROW() too), a join column, a field of a row value; not a whole row', () => {
    const r = analyze('SELECT email FROM users JOIN orders ON users.id = orders.user_id');
    expect(r.boundColumns.map((c) => `${c.table}.${c.column}`).sort()).toEqual([
      'orders.user_id',
      'users.email',
      'users.id',
    ]);
    expect(analyze('SELECT u FROM users u').boundColumns).toEqual([]);
    expect(
      analyze('SELECT (x).ssn FROM (SELECT u AS x FROM users u) s').boundColumns.map((c) => c.column),
    ).toEqual(['ssn']);
    expect(analyze('SELECT ROW(u.*) FROM users u').boundColumns.length).toBe(5);
    expect(analyze('SELECT (u).ssn FROM users u').boundColumns.map((c) => c.column)).toEqual(['ssn']);
  });
});

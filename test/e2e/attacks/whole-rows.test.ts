// Whole rows of a table with hidden columns: row constructors, row comparisons, to_jsonb and (u).* never carry a hidden value.
// Corpus: corpus/attacks/whole-rows.yaml.
import { describe, expect, test } from 'vitest';
import { EMAILS, outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice'] });
const { users } = fx;

describe('whole rows', () => {
  const refusedForAlice: string[] = [
    'select row(u.*) from users u',
    'select to_jsonb(u) from users u',
    'select (u.email, u.id) = (u.email, u.id) from users u',
    'select row(email) is distinct from row(null) from users',
    "select jsonb_path_query(to_jsonb(u), '$.email') from users u",
  ];
  for (const sql of refusedForAlice) {
    test(`alice: ${sql}`, async () => {
      expect((await outcome(users.alice, sql)).code).toBe('42501');
    });
  }

  test('alice: (u).* and tablesample are masked', async () => {
    const r = await outcome(users.alice, 'select (u).* from users u where id = 1');
    expect(r.rows).toEqual([{ id: 1, name: 'Ada Tervo', email: '*****', ssn: '*****', org_id: 2 }]);
    const t = await outcome(users.alice, 'select email from users tablesample bernoulli (100)');
    expect(t.rows.every((x) => (x as { email: string }).email === '*****')).toBe(true);
    expect(JSON.stringify(t.rows)).not.toContain(EMAILS[0]);
  });
});

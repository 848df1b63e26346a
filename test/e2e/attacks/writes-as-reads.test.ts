// Writes as reads: a write whose value, target or RETURNING reads a hidden column is refused; RETURNING of a written one is masked.
// Corpus: corpus/attacks/writes-as-reads.yaml.
import { describe, expect, test } from 'vitest';
import { inRollback } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['bob'] });
const { users } = fx;

describe('writes that read hidden columns', () => {
  const refusedForBob: string[] = [
    'update users set email = ssn where id = 1',
    'update users set name = email where id = 1',
    'update users set email = email where id = 1',
    "insert into users (id, name) values (1, 'x') on conflict (id) do update set name = users.email returning name",
    'update users set org_id = org_id where id = 1 returning (select count(*) from users x where x.email = users.email)',
    'insert into orders (id, user_id, note) select 1000 + id, id, name from users where email is not null',
    "insert into orders (id, user_id, note) select 1000 + u.id, u.id, 'x' from users u join orgs o on o.secret = 'x'",
    "update users set name = 'a' where id = 1 and org_id in (select id from orgs where secret is null)",
    'merge into users u using (values (1)) s(id) on u.id = s.id when matched then update set email = u.ssn',
  ];
  for (const sql of refusedForBob) {
    test(`bob: ${sql}`, async () => {
      expect((await inRollback(users.bob, sql)).code).toBe('42501');
    });
  }

  test('bob: RETURNING of a written hidden column is masked', async () => {
    for (const sql of [
      'update users set email = default where id = 1 returning email',
      'update users u set name = v.name from users v where v.id = u.id and u.id = 1 returning v.email',
      "with w as (update users set email = 'x@y' where id = 1 returning email) select * from w",
    ]) {
      const r = await inRollback(users.bob, sql);
      expect(r).toEqual({ code: 'ok', rows: [{ email: '*****' }] });
    }
  });

  test('bob: ON CONFLICT DO UPDATE reading excluded.<hidden column> fails upstream under roles: managed', async () => {
    // PostgreSQL needs SELECT on a column whose `excluded` value an ON CONFLICT DO UPDATE reads, and
    // a set login never holds SELECT on a column without SEE (README "Managed roles", limits).
    const sql =
      "insert into users (id, name) values (1, 'x') on conflict (id) do update set email = excluded.email returning email";
    expect(await inRollback(users.bob, sql)).toEqual({ code: '42501', rows: [] });
  });
});

// Expressions over hidden columns: every test, compute or sort of a hidden value is refused; plain references are masked.
// Corpus: corpus/attacks/hidden-column-expressions.yaml.
import { describe, expect, test } from 'vitest';
import { EMAILS, outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice'] });
const { users } = fx;

describe('tests and computations over hidden columns', () => {
  const refusedForAlice: string[] = [
    'select id from users where email is null',
    'select count(email) from users',
    'select count(*) filter (where ssn is null) from users',
    'select max(ssn) from users',
    'select email from users order by 1',
    'select id, email from users order by 2',
    "select string_agg(name, ',' order by ssn) from users",
    'select (array_agg(email))[1] from users',
    'select email collate "C" from users',
    'select email::varchar(3) from users',
    'select * from (select email from users) s order by 1',
    'select distinct on (id) id, email from users order by id, email',
    'select to_tsvector(email) from users',
    'select pg_column_size(email) from users',
    'select octet_length(email) from users',
    'select email::char(3) from users',
    "select format('%s', email) from users",
    "select concat_ws(',', email) from users",
    'select md5(email) from users',
    'select hashtext(email) from users',
    'select * from (select id, email as name from users) a natural join (select id, name from users) b',
    'select * from (select id, email as name from users) a join (select id, name from users) b using (id, name)',
    'with recursive r(e) as (select email from users union select e from r) select * from r limit 2',
    "select email from users intersect all select 'x'",
    'select array[email] from users',
    'select (select email from users limit 1)',
    'select upper(z) from users u(a, b, z)',
    'select upper(j.c) from (users u join orgs o on o.id = u.org_id) as j(a, b, c)',
    'select upper(e) from (table users) t(a, b, e)',
    'select (select upper(email)) from users',
    "select * from users where false and email = 'x'",
  ];
  for (const sql of refusedForAlice) {
    test(`alice: ${sql}`, async () => {
      expect((await outcome(users.alice, sql)).code).toBe('42501');
    });
  }

  test('alice: tableoid is a system column, usable; of a table with children it is a compute use', async () => {
    // users has no inheritance children (pg_class.relhassubclass): tableoid is one constant.
    // A partitioned table's tableoid names the partition its key chose: test/e2e/mask-at-read.test.ts.
    expect((await outcome(users.alice, 'select tableoid, id from users')).code).toBe('ok');
  });
});

describe('plain references', () => {
  test('alice: masked, not refused, where nothing hidden is tested', async () => {
    for (const sql of [
      'select distinct on (org_id) org_id, email from users order by org_id',
      'select id, email from users limit (select count(*) from users)',
      'select * from users u, lateral (select u.email) s',
      "select * from (select email from users union all select 'x') s",
      'select t.e from (table users) t(a, b, e)',
    ]) {
      const r = await outcome(users.alice, sql);
      expect(r.code).toBe('ok');
      const text = JSON.stringify(r.rows);
      for (const e of EMAILS) expect(text).not.toContain(e);
    }
  });
});

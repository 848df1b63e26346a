// Functions and types that run user code (operators, overloads, domain checks, ranges over domains) need MANAGE, however reached.
// Corpus: corpus/attacks/functions-and-types.yaml.
import { describe, expect, test } from 'vitest';
import { EMAILS, inRollback, outcome, SSNS } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  users: ['alice', 'bob'],
  setup: `
    drop schema if exists atk_operators cascade;
    drop schema if exists atk_domains cascade;
    drop schema if exists atk_ranges cascade;
    create schema atk_operators;
    create function atk_operators.pick_email(int, int) returns text language sql stable
      as 'select email from public.users where id = $1';
    create operator atk_operators.### (leftarg = int, rightarg = int, function = atk_operators.pick_email);
    -- A pg_catalog name with no integer overload: Postgres picks this one for length(<int>).
    create function atk_operators.length(integer) returns text language sql stable
      as 'select ssn from public.users where id = $1';
    create domain atk_operators.has_email as int check (atk_operators.pick_email(value, 0) is not null);
    create schema atk_domains;
    create function atk_domains.pick_email(int) returns text language sql stable
      as 'select email from public.users where id = $1';
    create domain atk_domains.has_email as int check (atk_domains.pick_email(value) is not null);
    create type atk_domains.comp as (x atk_domains.has_email);
    create table atk_domains.dt (id int, d atk_domains.has_email);
    create schema atk_ranges;
    create function atk_ranges.ssn_like(text) returns boolean language sql stable
      as 'select exists (select 1 from public.users where ssn like $1)';
    create domain atk_ranges.ssn_probe as text check (atk_ranges.ssn_like(value));
    create type atk_ranges.probe_range as range (subtype = atk_ranges.ssn_probe);
    create table atk_ranges.pr (id int, v atk_ranges.probe_range);
    create table atk_ranges.dt (id int, d atk_ranges.ssn_probe);
    insert into atk_ranges.dt values (1, '9%');
  `,
  teardown:
    'drop schema if exists atk_operators cascade; drop schema if exists atk_domains cascade; drop schema if exists atk_ranges cascade',
});
const { users } = fx;

describe('user code the analysis does not see: operators, overloads, domains', () => {
  // DESIGN.md "Side channels": user-defined functions and casts to domains whose checks call
  // user code need MANAGE. The analysis checks FuncCall names only.
  test('an unqualified user-defined operator runs its function without MANAGE', async () => {
    const c = await fx.proxy.client('alice');
    try {
      // The function itself is refused: MANAGE.
      expect((await outcome(c, 'select atk_operators.pick_email(1, 0)')).code).toBe('42501');
      await c.query('set search_path = public, atk_operators');
      const r = await outcome(c, 'select 1 ### 0 as e');
      expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
      expect(r.code).toBe('42501');
    } finally {
      await c.end();
    }
  });

  test('length(<integer>) is read as pg_catalog.length but Postgres calls a user overload', async () => {
    const c = await fx.proxy.client('alice');
    try {
      await c.query('set search_path = public, atk_operators');
      const r = await outcome(c, 'select length(id) as l from users where id = 1');
      expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
      expect(r.code).toBe('42501');
    } finally {
      await c.end();
    }
  });

  test('a cast to a domain runs its CHECK (user code): 23514 answers "is email null" per row', async () => {
    // id 7 (Gus Rademaker) has no email, id 1 has one.
    const hasEmail = await outcome(users.alice, 'select 1::atk_operators.has_email');
    const noEmail = await outcome(users.alice, 'select 7::atk_operators.has_email');
    expect(noEmail.code).toBe('42501');
    expect(hasEmail.code).toBe('42501');
  });

  test('alice: a schema-qualified user operator is refused (it runs user code: MANAGE)', async () => {
    expect(['0A000', '42501']).toContain((await outcome(users.alice, 'select 1 operator(public.+) 1')).code);
  });
});

describe('user code in domain checks, reached without a cast to the domain', () => {
  // atk_domains.has_email is a domain over int whose CHECK calls atk_domains.pick_email (user code reading
  // users.email). A cast to it needs MANAGE (blocked below); these paths coerce to it all the same.
  // id 7 has no email (23514), id 1 has one (success).
  const pairs: [string, string, string][] = [
    [
      'a composite type with a domain attribute',
      "select '(7)'::atk_domains.comp",
      "select '(1)'::atk_domains.comp",
    ],
    [
      'a row constructor cast to that composite',
      'select row(7)::atk_domains.comp',
      'select row(1)::atk_domains.comp',
    ],
    [
      'a table row type with a domain column',
      "select '(1,7)'::atk_domains.dt",
      "select '(1,1)'::atk_domains.dt",
    ],
    [
      'a column definition list',
      'select * from json_to_record(\'{"d":7}\') as x(d atk_domains.has_email)',
      'select * from json_to_record(\'{"d":1}\') as x(d atk_domains.has_email)',
    ],
    [
      'json_populate_record over a table with a domain column',
      'select (json_populate_record(null::atk_domains.dt, \'{"id":1,"d":7}\')).id',
      'select (json_populate_record(null::atk_domains.dt, \'{"id":1,"d":1}\')).id',
    ],
  ];
  for (const [what, noEmail, hasEmail] of pairs) {
    test(`alice: ${what}`, async () => {
      const a = await outcome(users.alice, noEmail);
      const b = await outcome(users.alice, hasEmail);
      expect(a.code).toBe(b.code);
      expect(a.code).toBe('42501');
    });
  }

  test('alice: PREPARE with a domain-typed parameter, then EXECUTE', async () => {
    const c = await fx.proxy.client('alice');
    try {
      const prep = await outcome(c, 'prepare p(atk_domains.has_email) as select $1 as v');
      if (prep.code !== 'ok') {
        expect(prep.code).toBe('42501');
        return;
      }
      const a = await outcome(c, 'execute p(7)');
      const b = await outcome(c, 'execute p(1)');
      expect(a.code).toBe(b.code);
      expect(a.code).toBe('42501');
    } finally {
      await c.end();
    }
  });

  test('bob: INSERT into a domain-typed column runs the CHECK (implicit coercion)', async () => {
    const a = await inRollback(users.bob, 'insert into atk_domains.dt values (1, 7)');
    const b = await inRollback(users.bob, 'insert into atk_domains.dt values (1, 1)');
    expect(a.code).toBe(b.code);
    expect(a.code).toBe('42501');
  });

  test('alice: a direct cast to the domain, or to an array of it, needs MANAGE', async () => {
    for (const sql of ['select 7::atk_domains.has_email', "select '{7}'::atk_domains.has_email[]"]) {
      expect((await outcome(users.alice, sql)).code).toBe('42501');
    }
  });
});

describe('ranges over domains, and row values with domain columns', () => {
  test('range-over-domain-cast: a cast to a range type whose subtype is a user domain needs MANAGE', async () => {
    // Range input runs the subtype's input, i.e. the domain CHECK (which reads users.ssn).
    const hit = await outcome(users.bob, "select '[901%,901%]'::atk_ranges.probe_range");
    const miss = await outcome(users.bob, "select '[000%,000%]'::atk_ranges.probe_range");
    expect(hit.code).toBe('42501');
    expect(miss.code).toBe('42501');
    const arr = await outcome(users.bob, `select '{"[000%,000%]"}'::atk_ranges._probe_range`);
    expect(arr.code).toBe('42501');
  });

  test('range-over-domain-write: writing a range column over a user domain needs MANAGE', async () => {
    const r = await inRollback(users.bob, "insert into atk_ranges.pr values (1, '[000%,000%]')");
    expect(r.code).toBe('42501');
  });

  test('populate-record-row-value: json_populate_record on a row value with a domain column needs MANAGE', async () => {
    // The statement never names the type: the row type comes from the table alias.
    const hit = await outcome(
      users.bob,
      `select json_populate_record(t, '{"d":"901%"}') from atk_ranges.dt t`,
    );
    const miss = await outcome(
      users.bob,
      `select jsonb_populate_record(t, '{"d":"000%"}') from atk_ranges.dt t`,
    );
    expect(hit.code).toBe('42501');
    expect(miss.code).toBe('42501');
  });
});

// Constraints as oracles: a write whose success or constraint error would answer a question about a hidden value is refused.
// Corpus: corpus/attacks/constraints-as-oracles.yaml.
import { describe, expect, test } from 'vitest';
import { cascadeIntoCheckTables } from '../../helpers/ddl.js';
import { inRollback, outcome, SSNS } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  users: ['bob'],
  setup: `
    drop schema if exists atk_constraints cascade;
    drop table if exists atk_people;
    create schema atk_constraints;
    create table atk_constraints.people (id int primary key, name text not null, ssn text, org_id int,
                                         check (ssn is not null or org_id is not null));
    insert into atk_constraints.people values (1, 'Ada', '901-13-7919', 1), (2, 'Bram', null, 2);
    create table atk_constraints.accounts (id int primary key, email text unique);
    insert into atk_constraints.accounts values (1, 'ada.tervo@example.com'), (2, 'bram.wendt@example.com');
    create table atk_constraints.invites (id int primary key, email text references atk_constraints.accounts (email));
    create table atk_constraints.gen (id int primary key, name text, ssn text,
                                      g text generated always as (name || ':' || ssn) stored unique);
    insert into atk_constraints.gen values (1, 'Ada', '901-13-7919'), (2, 'Bram', '902-16-5838');
    create table atk_constraints.tree (id int primary key, name text, manager_id int references atk_constraints.tree (id));
    insert into atk_constraints.tree values (1, 'boss', null), (2, 'ada', 1), (3, 'bram', null);
    ${cascadeIntoCheckTables('atk_constraints')}
    create table atk_people (id int primary key, name text not null, ssn text, org_id int,
                             check (ssn is not null or org_id is not null));
    create unique index atk_people_name on atk_people (name) where ssn is not null;
    insert into atk_people values (1, 'Ada', '901-13-7919', 1), (2, 'Bram', null, 2), (3, 'Cleo', '903-19-3757', 3);
  `,
  hidden: [
    { schema: 'atk_constraints', table: 'people', column: 'ssn' },
    { schema: 'atk_constraints', table: 'accounts', column: 'email' },
    { schema: 'atk_constraints', table: 'gen', column: 'ssn' },
    { schema: 'atk_constraints', table: 'tree', column: 'manager_id' },
    { schema: 'atk_constraints', table: 'child', column: 'secret' },
    { schema: 'public', table: 'atk_people', column: 'ssn' },
  ],
  teardown: 'drop schema if exists atk_constraints cascade; drop table if exists atk_people',
});
const { users } = fx;

describe('writes as reads through visible columns', () => {
  // DESIGN.md "Writes as reads" refuses a write into a hidden column under a unique constraint,
  // but a write into a VISIBLE column also makes Postgres check constraints that read the hidden
  // one: a partial unique index whose predicate reads it, a unique key that includes it, a CHECK
  // that combines it with the written column. 23505 / 23514 vs success is the answer.
  test('the setup hides ssn from bob', async () => {
    const r = await outcome(users.bob, 'select id, ssn from atk_people where id = 1');
    expect(r.rows).toEqual([{ id: 1, ssn: '*****' }]);
    expect((await outcome(users.bob, 'select id from atk_people where ssn is null')).code).toBe('42501');
  });

  test('partial unique index (name) WHERE ssn IS NOT NULL: renaming a row answers "is its ssn null"', async () => {
    // Same statement, two rows: 23505 for id 3 (ssn set), success for id 2 (ssn null).
    const withSsn = await inRollback(users.bob, "update atk_people set name = 'Ada' where id = 3");
    const withoutSsn = await inRollback(users.bob, "update atk_people set name = 'Ada' where id = 2");
    expect(withSsn.code).toBe(withoutSsn.code);
    expect(withSsn.code).toBe('42501');
  });

  test('CHECK (ssn IS NOT NULL OR org_id IS NOT NULL): clearing org_id answers "is ssn null"', async () => {
    const withSsn = await inRollback(users.bob, 'update atk_people set org_id = null where id = 1');
    const withoutSsn = await inRollback(users.bob, 'update atk_people set org_id = null where id = 2');
    expect(withSsn.code).toBe(withoutSsn.code);
    expect(withSsn.code).toBe('42501');
  });
});

describe('writes as reads: constraints the constraint rule does not look at', () => {
  test('INSERT … ON CONFLICT DO UPDATE runs the CHECK on the existing row (ssn is not null or org_id is not null)', async () => {
    // constraintOracle skips CHECK constraints for kind INSERT ("an INSERT's CHECK reads only the
    // new row"), but DO UPDATE checks the updated existing row, hidden ssn included.
    const upsert = (id: number) =>
      `insert into atk_constraints.people (id, name, org_id) values (${id}, 'x', 5) on conflict (id) do update set org_id = null`;
    const withSsn = await inRollback(users.bob, upsert(1));
    const withoutSsn = await inRollback(users.bob, upsert(2));
    expect(withSsn.code).toBe(withoutSsn.code);
    expect(withSsn.code).toBe('42501');
  });

  test('a foreign key onto a hidden unique column: INSERT answers "does this email exist"', async () => {
    // invites.email (visible) REFERENCES accounts.email (hidden): 23503 vs success.
    const hit = await inRollback(
      users.bob,
      "insert into atk_constraints.invites values (1, 'ada.tervo@example.com')",
    );
    const miss = await inRollback(
      users.bob,
      "insert into atk_constraints.invites values (1, 'nobody@example.com')",
    );
    expect(hit.code).toBe(miss.code);
    expect(hit.code).toBe('42501');
  });

  test('a hidden column referencing a visible key: UPDATE of the key answers "does a hidden manager_id point here"', async () => {
    const referenced = await inRollback(users.bob, 'update atk_constraints.tree set id = 10 where id = 1');
    const free = await inRollback(users.bob, 'update atk_constraints.tree set id = 10 where id = 3');
    expect(referenced.code).toBe(free.code);
    expect(referenced.code).toBe('42501');
  });

  test('a unique generated column computed from the hidden ssn: writing ssn answers "is this row 1\'s ssn"', async () => {
    // g = name || ':' || ssn is UNIQUE; ssn itself is in no index, so its write is not refused.
    const guess = (ssn: string) => `update atk_constraints.gen set name = 'Ada', ssn = '${ssn}' where id = 2`;
    const right = await inRollback(users.bob, guess(SSNS[0] as string));
    const wrong = await inRollback(users.bob, guess('000-00-0000'));
    expect(right.code).toBe(wrong.code);
    expect(right.code).toBe('42501');
  });
});

describe('constraints the constraint rule refuses', () => {
  test('bob: the constraint rule refuses UPDATE of a column a CHECK reads with a hidden one', async () => {
    expect(
      (await inRollback(users.bob, 'update atk_constraints.people set org_id = null where id = 1')).code,
    ).toBe('42501');
  });

  test('bob: a hidden column under a unique constraint cannot be written', async () => {
    expect(
      (
        await inRollback(
          users.bob,
          "update atk_constraints.accounts set email = 'bram.wendt@example.com' where id = 1",
        )
      ).code,
    ).toBe('42501');
  });

  test('fk-cascade-check-hidden: ON UPDATE CASCADE into a CHECK that reads a hidden column is refused', async () => {
    const r = await inRollback(users.bob, 'update atk_constraints.parent set id = 102 where id = 1');
    expect(r.code).toBe('42501');
  });
});

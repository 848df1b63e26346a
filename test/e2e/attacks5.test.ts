// Fifth round of attacks: types over domains that escape MANAGE, foreign-key cascades as oracles.
// describe('leaks'): findings — each asserts the SAFE behaviour and fails until the product is fixed.
// Corpus: corpus/attacks5.yaml.
import type pg from 'pg';
import pgLib from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD } from '../../src/embedded/demo.js';
import { ddl } from '../helpers/ddl.js';
import { inRollback, outcome } from '../helpers/outcomes.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
let setup: pg.Client;
let bob: pg.Client;

async function owner(): Promise<pg.Client> {
  const { port } = inject('pg');
  const c = new pgLib.Client({
    host: '127.0.0.1',
    port,
    user: 'pgwarden_app',
    password: DEMO_APP_PASSWORD,
    database: 'demo',
  });
  await c.connect();
  return c;
}

beforeAll(async () => {
  setup = await owner();
  await ddl(setup, 'drop schema if exists atk5 cascade');
  await setup.query('create schema atk5');
  await setup.query(`
    create function atk5.ssn_like(text) returns boolean language sql stable
      as 'select exists (select 1 from public.users where ssn like $1)';
    create domain atk5.ssn_probe as text check (atk5.ssn_like(value));
    create type atk5.probe_range as range (subtype = atk5.ssn_probe);
    create table atk5.pr (id int, v atk5.probe_range);
    create table atk5.dt (id int, d atk5.ssn_probe);
    insert into atk5.dt values (1, '9%');
    create table atk5.parent (id int primary key, name text);
    insert into atk5.parent values (1, 'p1'), (2, 'p2');
    create table atk5.child (id int primary key,
                             parent_id int references atk5.parent (id) on update cascade,
                             secret text, check (parent_id < 100 or secret is null));
    insert into atk5.child values (1, 1, 'child-secret-1'), (2, 2, null);
  `);
  const cfg = demoConfigObject();
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  for (const role of ['analyst', 'support']) {
    roles[role]?.permissions.push({
      effect: 'deny',
      actions: ['SEE'],
      database: 'demo',
      schema: 'atk5',
      table: 'child',
      column: 'secret',
    });
  }
  proxy = await startTestProxy(cfg);
  bob = await proxy.client('bob');
});

afterAll(async () => {
  await bob.end();
  await proxy.close();
  await ddl(setup, 'drop schema if exists atk5 cascade');
  await setup.end();
});

describe('leaks', () => {
  test('range-over-domain-cast: a cast to a range type whose subtype is a user domain needs MANAGE', async () => {
    // Range input runs the subtype's input, i.e. the domain CHECK (which reads users.ssn).
    const hit = await outcome(bob, "select '[901%,901%]'::atk5.probe_range");
    const miss = await outcome(bob, "select '[000%,000%]'::atk5.probe_range");
    expect(hit.code).toBe('42501');
    expect(miss.code).toBe('42501');
    const arr = await outcome(bob, `select '{"[000%,000%]"}'::atk5._probe_range`);
    expect(arr.code).toBe('42501');
  });

  test('range-over-domain-write: writing a range column over a user domain needs MANAGE', async () => {
    const r = await inRollback(bob, "insert into atk5.pr values (1, '[000%,000%]')");
    expect(r.code).toBe('42501');
  });

  test('populate-record-row-value: json_populate_record on a row value with a domain column needs MANAGE', async () => {
    // The statement never names the type: the row type comes from the table alias.
    const hit = await outcome(bob, `select json_populate_record(t, '{"d":"901%"}') from atk5.dt t`);
    const miss = await outcome(bob, `select jsonb_populate_record(t, '{"d":"000%"}') from atk5.dt t`);
    expect(hit.code).toBe('42501');
    expect(miss.code).toBe('42501');
  });

  test('fk-cascade-check-hidden: ON UPDATE CASCADE into a CHECK that reads a hidden column is refused', async () => {
    const r = await inRollback(bob, 'update atk5.parent set id = 102 where id = 1');
    expect(r.code).toBe('42501');
  });

  test('fk-cascade-error-detail: the cascaded CHECK failure does not show the hidden value', async () => {
    await bob.query('begin');
    try {
      const err = await bob.query('update atk5.parent set id = 102 where id = 1').then(
        () => null,
        (e: pg.DatabaseError) => e,
      );
      expect(JSON.stringify({ m: err?.message, d: err?.detail })).not.toContain('child-secret-1');
    } finally {
      await bob.query('rollback');
    }
  });
});

// search_path tracking: what the server resolves a name to is what pgwarden decides on, across COMMIT, PREPARE and "$user".
// Corpus: corpus/attacks/search-path.yaml.
import { describe, expect, test } from 'vitest';
import { EMAILS, outcome, SSNS } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  // "$user" is the upstream login's schema: pgwarden_app, with a hidden column the next schema's table lacks.
  setup: `
    drop schema if exists pgwarden_app cascade;
    drop table if exists public.atk_accounts;
    create schema pgwarden_app;
    create table pgwarden_app.atk_accounts (id int, secret text);
    insert into pgwarden_app.atk_accounts values (1, 'app-secret-7731');
    create table public.atk_accounts (id int, secret text);
    insert into public.atk_accounts values (1, 'public-value');
  `,
  hidden: [{ schema: 'pgwarden_app', table: 'atk_accounts', column: 'secret' }],
  hideFrom: ['analyst'],
  teardown: 'drop schema if exists pgwarden_app cascade; drop table if exists public.atk_accounts',
});

describe('search_path tracking', () => {
  test('SET; COMMIT; <error> in one Query: the proxy reverts the SET that the COMMIT made permanent', async () => {
    const dba = await fx.proxy.client('dba');
    await dba.query('drop schema if exists atk_sp cascade');
    await dba.query('create schema atk_sp');
    await dba.query('create table atk_sp.users (id int, name text, email text, ssn text, org_id int)');
    await dba.query("insert into atk_sp.users values (1, 'alt', 'alt@example.com', 'alt-ssn', 1)");
    const c = await fx.proxy.client('alice');
    try {
      await c.query('set search_path = atk_sp, public');
      // Upstream: the implicit transaction is committed by COMMIT, so search_path = public
      // stays; the proxy sees the later error and reverts to atk_sp, public.
      const e = await outcome(c, 'set search_path = public; commit; select 1/0');
      expect(e.code).toBe('22012');
      const r0 = await outcome(c, 'select lower(email) as e from users where id = 1');
      expect(JSON.stringify(r0.rows)).not.toContain(EMAILS[0]);
      await c.query('set search_path = atk_sp, public');
      // The same with an explicit transaction in the string.
      expect((await outcome(c, 'begin; set search_path = public; commit; select 1/0')).code).toBe('22012');
      const r = await outcome(c, "select lower(email) as e, ssn || '' as s from users where id = 1");
      expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
      expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
    } finally {
      await c.end();
      await dba.query('drop schema atk_sp cascade');
      await dba.end();
    }
  });
});

describe('search_path: SQL-level PREPARE re-analyzed by Postgres under the new path', () => {
  test('PREPARE under (atk_pp, public), SET search_path = public, EXECUTE: the old decision is reused', async () => {
    const dba = await fx.proxy.client('dba');
    await dba.query('drop schema if exists atk_pp cascade');
    await dba.query('create schema atk_pp');
    await dba.query('create table atk_pp.users (id int, name text, email text, ssn text, org_id int)');
    await dba.query("insert into atk_pp.users values (1, 'alt', 'alt@example.com', 'alt-ssn', 1)");
    const c = await fx.proxy.client('alice');
    try {
      await c.query('set search_path = atk_pp, public');
      await c.query("prepare p as select lower(email) as e, ssn || '' as s from users order by id limit 2");
      await c.query('set search_path = public');
      // Postgres's plan cache re-analyzes p under the new search_path: public.users.
      const r = await outcome(c, 'execute p');
      expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
      expect(JSON.stringify(r.rows)).not.toContain(SSNS[0]);
    } finally {
      await c.end();
      await dba.query('drop schema atk_pp cascade');
      await dba.end();
    }
  });
});

describe('search_path "$user" is not expanded', () => {
  // Postgres reads "$user" as the session user's schema (the upstream login's: pgwarden_app);
  // the analysis looks for a schema literally named "$user", finds none, and resolves the next
  // schema on the path. Rails and others SET search_path TO "$user", public on connect.
  test('SET search_path = "$user", public: an expression over pgwarden_app.atk_accounts.secret', async () => {
    const c = await fx.proxy.client('alice');
    try {
      // The hidden column is masked, and refused in an expression, when named plainly.
      const plain = await outcome(c, 'select upper(secret) from pgwarden_app.atk_accounts');
      expect(plain.code).toBe('42501');
      await c.query('set search_path = "$user", public');
      const r = await outcome(c, 'select upper(secret) as s from atk_accounts');
      expect(JSON.stringify(r.rows)).not.toContain('APP-SECRET-7731');
    } finally {
      await c.end();
    }
  });
});

// Catalog freshness: the catalog pgwarden decides with is the one the server plans with (in-band reads, DDL, new types).
// Corpus: corpus/attacks/catalog-freshness.yaml.
import { describe, expect, test } from 'vitest';
import { decodeReadyForQuery } from '../../../src/wire/backend.js';
import { BackendCode } from '../../../src/wire/codes.js';
import type { Frame } from '../../../src/wire/framer.js';
import { query } from '../../../src/wire/frontend-encode.js';
import { EMAILS, errorCodes, outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  users: ['alice', 'dba'],
  setup: `
    drop schema if exists atk_catalog cascade;
    create schema atk_catalog;
    create function atk_catalog.pick_email(int) returns text language sql stable
      as 'select email from public.users where id = $1';
    create domain atk_catalog.has_email as int check (atk_catalog.pick_email(value) is not null);
    create table atk_catalog.dt (id int, d atk_catalog.has_email);
    create view atk_catalog.v1 as select id, name as contact from public.users;
    create view atk_catalog.v2 as select id, name as contact from public.users;
  `,
  teardown: 'drop schema if exists atk_catalog cascade',
});
const { users } = fx;

function lastStatus(frames: readonly Frame[]): string {
  const z = frames.filter((f) => f.code === BackendCode.ReadyForQuery).at(-1);
  return z ? decodeReadyForQuery(z.payload) : 'none';
}

describe('the in-band catalog outlives the schema it describes', () => {
  // An unknown name makes the session read the catalog on its own upstream connection
  // (session.ts inBandCatalog). That catalog then serves every later statement of the session
  // (catalogNow / catalog prefer ownCatalog) until this session runs DDL itself: no TTL, and
  // another session's DDL (which invalidates the shared catalog) does not reach it. The RowDescription
  // check cannot catch a view redefined in place: CREATE OR REPLACE VIEW keeps the view's OID and
  // attnums, so the predicted origin still matches.
  test('after one unknown name, a view redefined by dba (name → email) is still read as name', async () => {
    const c = await fx.proxy.client('alice');
    try {
      expect((await outcome(c, 'select contact from atk_catalog.v1 where id = 1')).rows).toEqual([
        { contact: 'Ada Tervo' },
      ]);
      // Any unknown name: the shared catalog is refreshed, then read in-band and kept.
      expect((await outcome(c, 'select * from atk_catalog.no_such_table')).code).toBe('42P01');
      await users.dba.query(
        'create or replace view atk_catalog.v1 as select id, email as contact from public.users',
      );
      await new Promise((r) => setTimeout(r, 1100));
      const r = await outcome(c, 'select contact from atk_catalog.v1 where id = 1');
      expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
      // What a fresh session gets: the column comes from users.email now, masked.
      expect(r.rows).toEqual([{ contact: '*****' }]);
      const computed = await outcome(c, 'select upper(contact) as u from atk_catalog.v1 where id = 1');
      expect(JSON.stringify(computed.rows)).not.toContain(EMAILS[0]?.toUpperCase());
      expect(computed.code).toBe('42501');
    } finally {
      await c.end();
    }
  });

  test('read inside a REPEATABLE READ transaction, the in-band catalog is the snapshot, not what the server plans with', async () => {
    // The catalog queries run under the client's transaction snapshot; parse analysis upstream
    // uses the latest catalog. DDL committed after the snapshot is invisible to the in-band read
    // even though it happened before the read.
    const c = await fx.proxy.client('alice');
    try {
      await c.query('begin isolation level repeatable read');
      await c.query('select 1 as one');
      await users.dba.query(
        'create or replace view atk_catalog.v2 as select id, email as contact from public.users',
      );
      await c.query('savepoint s');
      expect((await outcome(c, 'select * from atk_catalog.no_such_table_2')).code).toBe('42P01');
      await c.query('rollback to savepoint s');
      const r = await outcome(c, 'select contact from atk_catalog.v2 where id = 1');
      expect(JSON.stringify(r.rows)).not.toContain(EMAILS[0]);
      expect(r.code === '42501' || JSON.stringify(r.rows) === '[{"contact":"*****"}]').toBe(true);
    } finally {
      await c.query('rollback').catch(() => undefined);
      await c.end();
    }
  });
});

describe('the in-band catalog read leaves a transaction behind when it fails', () => {
  // Outside a transaction the read is `BEGIN …; <reads>; COMMIT;` in one Query. When a read fails
  // (statement_timeout, which any client may SET), the rest of the string is skipped: the BEGIN
  // stays open, aborted, and its ReadyForQuery ('E') is swallowed. An autocommit client is now in
  // a failed transaction block it never opened (every statement 25P02 until it rolls back).
  test('SET statement_timeout = 2; an unknown name: the session is left in an aborted BEGIN', async () => {
    const c = await fx.raw('alice');
    try {
      c.write(query('set statement_timeout = 2'));
      await c.untilReady();
      c.write(query('select * from atk_catalog.no_such_table_3'));
      const refused = await c.untilReady();
      expect(errorCodes(refused)).toEqual(['42P01']);
      expect(lastStatus(refused)).toBe('I');
      c.write(query('reset statement_timeout'));
      const next = await c.untilReady();
      expect(errorCodes(next)).toEqual([]);
      expect(lastStatus(next)).toBe('I');
    } finally {
      c.end();
    }
  });
});

describe('objects the catalog read has not seen', () => {
  test('alice: a domain created after the catalog was read is cast to freely (unknown types pass)', async () => {
    // Relations and columns the catalog does not know are refused (then re-read); a type the
    // catalog's user-type list does not name is presumed harmless, so a domain made directly on
    // the server (a migration) is a free oracle until the next catalog read.
    const c = await fx.proxy.client('alice');
    try {
      await c.query('select 1 as warm');
      await fx.owner.query(
        'create domain atk_catalog.late_email as int check (atk_catalog.pick_email(value) is not null)',
      );
      const a = await outcome(c, 'select 7::atk_catalog.late_email as d');
      const b = await outcome(c, 'select 1::atk_catalog.late_email as d');
      expect(a.code).toBe(b.code);
      expect(a.code).toBe('42501');
    } finally {
      await c.end();
      await fx.owner.query('drop domain if exists atk_catalog.late_email');
    }
  });

  test('alice: COPY, temporary tables and SELECT INTO need MANAGE (no session-local shadow of users)', async () => {
    for (const sql of [
      'create temp table users (id int, name text, email text, ssn text, org_id int)',
      'select * into temp users from public.users',
      'copy atk_catalog.dt from stdin',
    ]) {
      expect((await outcome(users.alice, sql)).code).toBe('42501');
    }
  });

  test("alice: the client's own RELEASE / ROLLBACK TO pgwarden_catalog touches only its own savepoints", async () => {
    const c = await fx.proxy.client('alice');
    try {
      await c.query('begin');
      await c.query('savepoint pgwarden_catalog');
      expect((await outcome(c, 'select * from atk_catalog.no_such_table_4')).code).toBe('42P01');
      await c.query('rollback to savepoint pgwarden_catalog');
      const r = await outcome(c, 'select id, email from users where id = 1');
      expect(r.rows).toEqual([{ id: 1, email: '*****' }]);
      await c.query('release savepoint pgwarden_catalog');
      await c.query('rollback');
    } finally {
      await c.end();
    }
  });
});

// Issue 15: after DDL under roles: managed, the grant sync covers only what the change reaches, and leaves every set login exactly where a full sync would.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_ROLE } from '../../src/embedded/demo.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

const P = `t15s${process.pid}`;
/** A database of its own: DDL of suites running beside it in `demo` would make syncs full. */
const DB = `${P}_db`;
const SECRET = `${P}_secret`;
const PARENT = `${P}_parent`;

/**
 * The demo config on database DB (client-facing name `demo`), with analyst and support also denied
 * SEE on `${SECRET}.v` and `${PARENT}.s`.
 */
function config(): Record<string, unknown> {
  const cfg = demoConfigObject();
  const demo = (cfg.databases as Record<string, Record<string, unknown>>).demo as Record<string, unknown>;
  demo.url = String(demo.url).replace(/\/demo$/, `/${DB}`);
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  for (const r of ['analyst', 'support'])
    roles[r]?.permissions.push(
      { effect: 'deny', actions: ['SEE'], database: 'demo', schema: 'public', table: SECRET, column: 'v' },
      { effect: 'deny', actions: ['SEE'], database: 'demo', schema: 'public', table: PARENT, column: 's' },
    );
  return cfg;
}

let proxy: TestProxy;
let admin: pg.Client;
let dba: pg.Client;
const logLines: Record<string, unknown>[] = [];
const logins: string[] = [];

beforeAll(async () => {
  const { host, port, superuser, superuserPassword } = inject('pg');
  const su = new pg.Client({
    host,
    port,
    user: superuser,
    password: superuserPassword,
    database: 'postgres',
  });
  await su.connect();
  await su.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await su.query(`CREATE DATABASE ${DB} OWNER ${DEMO_APP_ROLE}`);
  await su.end();
  admin = new pg.Client({ host, port, user: superuser, password: superuserPassword, database: DB });
  await admin.connect();
  await admin.query(
    `SET ROLE ${DEMO_APP_ROLE}; CREATE TABLE orgs (id int PRIMARY KEY, name text); RESET ROLE`,
  );
  proxy = await startTestProxy(config(), { logLines });
  dba = await proxy.client('dba');
  for (const u of ['alice', 'bob']) {
    const c = await proxy.client(u);
    logins.push((await c.query('select current_user as u')).rows[0].u as string);
    await c.end();
  }
});
afterAll(async () => {
  await dba
    ?.query(`DROP TABLE IF EXISTS ${P}_a, ${SECRET}, ${P}_child, ${PARENT}, ${P}_ser CASCADE`)
    .catch(() => undefined);
  await dba?.end();
  await proxy?.close();
  await admin?.end();
  const { host, port, superuser, superuserPassword } = inject('pg');
  const su = new pg.Client({
    host,
    port,
    user: superuser,
    password: superuserPassword,
    database: 'postgres',
  });
  await su.connect();
  await su.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`).finally(() => su.end());
});

/** Every privilege the set logins hold on this test's relations and on schemas, as sorted text. */
async function held(): Promise<string[]> {
  const r = await admin.query<{ p: string }>(
    `SELECT g.rolname || ' ' || c.relname || ' ' || a.privilege_type AS p
       FROM pg_class c, aclexplode(c.relacl) a JOIN pg_roles g ON g.oid = a.grantee
      WHERE g.rolname = ANY ($1) AND c.relname LIKE $2
     UNION ALL
     SELECT g.rolname || ' ' || c.relname || '.' || att.attname || ' ' || a.privilege_type
       FROM pg_attribute att JOIN pg_class c ON c.oid = att.attrelid, aclexplode(att.attacl) a
       JOIN pg_roles g ON g.oid = a.grantee
      WHERE g.rolname = ANY ($1) AND c.relname LIKE $2 AND NOT att.attisdropped
     UNION ALL
     SELECT g.rolname || ' schema ' || n.nspname || ' ' || a.privilege_type
       FROM pg_namespace n, aclexplode(n.nspacl) a JOIN pg_roles g ON g.oid = a.grantee
      WHERE g.rolname = ANY ($1)`,
    [logins, `${P}%`],
  );
  return r.rows
    .map((x) => x.p.replace(logins[0] as string, 'alice').replace(logins[1] as string, 'bob'))
    .sort();
}

/**
 * Runs `ddl` as dba, then a statement as alice that waits for the sync after the catalog read;
 * returns what the set logins hold then, after checking that a full sync changes nothing.
 */
async function afterDdl(ddl: string): Promise<string[]> {
  const syncs = logLines.length;
  await dba.query(ddl);
  const alice = await proxy.client('alice');
  // A volatile function: a read that waits for the grant sync after the catalog read (a plain
  // read of tables the DDL did not touch would not, grant-independent.ts).
  await alice.query('select random() from orgs limit 1');
  await alice.end();
  const scoped = await held();
  const events = logLines.slice(syncs).filter((l) => l.event === 'grant-sync');
  expect(events.length, ddl).toBeGreaterThan(0);
  expect(
    events.every((e) => typeof e.scope === 'number'),
    `${ddl}: scoped syncs only (${JSON.stringify(events)})`,
  ).toBe(true);
  await proxy.server.managed.syncInFull('demo');
  expect(await held(), `${ddl}: a full sync would leave the same`).toEqual(scoped);
  return scoped;
}

describe('a grant sync scoped to what DDL touched', () => {
  test('creating, altering, renaming (onto a name with a hidden column), inheriting, serials and drops: each as a full sync leaves it', {
    timeout: 120_000,
  }, async () => {
    expect(await afterDdl(`CREATE TABLE ${P}_a (id int PRIMARY KEY, v text, s text)`)).toEqual(
      expect.arrayContaining([`alice ${P}_a.v SELECT`, `bob ${P}_a.v INSERT`]),
    );
    expect(await afterDdl(`ALTER TABLE ${P}_a ADD COLUMN w int`)).toContain(`alice ${P}_a.w SELECT`);
    // Renamed onto the name whose column v is hidden: alice and bob lose SELECT on v at once.
    const renamed = await afterDdl(`ALTER TABLE ${P}_a RENAME TO ${SECRET}`);
    expect(renamed).not.toContain(`alice ${SECRET}.v SELECT`);
    expect(renamed).toContain(`alice ${SECRET}.s SELECT`);
    expect(renamed).toContain(`bob ${SECRET}.v INSERT`);
    expect(await afterDdl(`ALTER TABLE ${SECRET} RENAME COLUMN v TO v2`)).toContain(
      `alice ${SECRET}.v2 SELECT`,
    );
    // A view over it: its column from the hidden one carries it.
    expect(await afterDdl(`CREATE VIEW ${P}_view AS SELECT id, s FROM ${SECRET}`)).toContain(
      `alice ${P}_view.s SELECT`,
    );
    // Inheritance: the child's s is hidden while it inherits from the parent whose s is.
    await afterDdl(`CREATE TABLE ${PARENT} (k int, s text)`);
    const child = await afterDdl(`CREATE TABLE ${P}_child (extra int) INHERITS (${PARENT})`);
    expect(child).toContain(`alice ${P}_child.k SELECT`);
    expect(child).not.toContain(`alice ${P}_child.s SELECT`);
    expect(await afterDdl(`ALTER TABLE ${P}_child NO INHERIT ${PARENT}`)).toContain(
      `alice ${P}_child.s SELECT`,
    );
    // A serial's sequence: USAGE for the writer while the default calls it, gone with the default.
    const ser = await afterDdl(`CREATE TABLE ${P}_ser (id serial, x text)`);
    expect(ser).toContain(`bob ${P}_ser_id_seq USAGE`);
    expect(ser).not.toContain(`alice ${P}_ser_id_seq USAGE`);
    expect(await afterDdl(`ALTER TABLE ${P}_ser ALTER COLUMN id DROP DEFAULT`)).not.toContain(
      `bob ${P}_ser_id_seq USAGE`,
    );
    const dropped = await afterDdl(`DROP TABLE ${SECRET} CASCADE`);
    expect(dropped.filter((p) => p.includes(SECRET) || p.includes(`${P}_view`))).toEqual([]);
  });
});

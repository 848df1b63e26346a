// An incremental catalog read after DDL equals a full read, reads only what changed, and never waits on another session's lock.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  inBandExecuteHead,
  inBandExecuteReads,
  inBandPrepares,
  READ_PATH,
} from '../../src/catalog/catalog-reads.js';
import {
  buildCatalog,
  catalogStamp,
  NeedsFullRead,
  readBaseOf,
  readCatalog,
} from '../../src/catalog/read-catalog.js';
import type { Catalog } from '../../src/catalog/types.js';

const server = inject('pg');
/** The prefix of the in-band statements prepared on `client`. */
const IN_BAND = 'pgwarden_catalog_test';
const DB = 'catalog_incr';

function connect(
  database: string,
  user = 'pgwarden_app',
  password = 'pgwarden-app-demo',
): Promise<pg.Client> {
  const client = new pg.Client({ host: server.host, port: server.port, database, user, password });
  return client.connect().then(() => client);
}

/** A catalog as plain data, without its version, for deep comparison. */
function plain(c: Catalog): unknown {
  const sortFns = [...c.functions].map(([k, l]) => [k, [...l].sort((a, b) => a.oid - b.oid)] as const);
  return {
    serverVersionNum: c.serverVersionNum,
    defaultSearchPath: c.defaultSearchPath,
    sessionUser: c.sessionUser,
    namespaces: [...c.namespaces].sort(),
    relations: [...c.relations].sort(([a], [b]) => (a < b ? -1 : 1)),
    functions: sortFns.sort(([a], [b]) => (a < b ? -1 : 1)),
    types: [...(c.types ?? [])].sort(([a], [b]) => (a < b ? -1 : 1)),
    userCodeTypeOids: [...(c.userCodeTypeOids ?? [])].sort((a, b) => a - b),
  };
}

describe('incremental catalog reads', () => {
  let client: pg.Client;
  let other: pg.Client;
  let catalog: Catalog;

  beforeAll(async () => {
    const admin = await connect('postgres', server.superuser, server.superuserPassword);
    await admin.query(`DROP DATABASE IF EXISTS ${DB}`);
    await admin.query(`CREATE DATABASE ${DB} OWNER pgwarden_app`);
    await admin.end();
    client = await connect(DB);
    other = await connect(DB);
    await client.query(`
      CREATE SCHEMA app;
      CREATE TABLE app.users (id int PRIMARY KEY, name text NOT NULL, email text, ssn text);
      CREATE VIEW app.user_contacts AS SELECT id, name, email FROM app.users;
      CREATE TABLE app.orders (id int PRIMARY KEY, user_id int REFERENCES app.users, amount numeric(10,2));
      CREATE FUNCTION app.f(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT x';
    `);
    catalog = await readCatalog(client, 1);
    // The in-band read's statements, prepared as a session's connection prepares them.
    await client.query(`BEGIN; ${READ_PATH}; ${inBandPrepares(IN_BAND)} COMMIT`);
  });
  afterAll(async () => {
    await client.end();
    await other.end();
  });

  /** Runs `ddl`, then checks the incremental read against a full one; returns it. */
  async function step(ddl: string): Promise<Catalog> {
    await client.query(ddl);
    const incremental = await readCatalog(client, catalog.version + 1, catalog);
    const full = await readCatalog(client, catalog.version + 1);
    expect(plain(incremental), ddl).toEqual(plain(full));
    // The form an in-band read sends (the head, then the reads with its answer spelled out, each
    // an EXECUTE of a statement prepared on the connection, with its generic plan) gives the same
    // catalog.
    const base = readBaseOf(catalog);
    expect(base).toBeDefined();
    if (base) {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      try {
        // The login's path, taken before READ_PATH (as the relay takes it).
        const { path } = (await client.query('SELECT current_schemas(false)::text[] AS path')).rows[0] as {
          path: string[];
        };
        await client.query(`SET LOCAL plan_cache_mode = force_generic_plan; ${READ_PATH}`);
        const headRow = (await client.query(inBandExecuteHead(IN_BAND, base))).rows[0] as {
          reread: string[];
          types_changed: boolean;
          functions_changed: boolean;
        };
        const head = { ...headRow, path };
        const reads = (await client.query(
          inBandExecuteReads(IN_BAND, {
            reread: head.reread.map(Number),
            typesChanged: head.types_changed,
            functionsChanged: head.functions_changed,
            systemUserCode: base.systemUserCodeTypes,
          }),
        )) as unknown as pg.QueryResult[];
        const inline = buildCatalog([{ rows: [head] }, ...reads], catalog.version + 1, catalog);
        expect(plain(inline), `${ddl} (in-band form)`).toEqual(plain(full));
      } catch (e) {
        // A renamed schema: the in-band read reads everything then.
        if (!(e instanceof NeedsFullRead)) throw e;
        expect(ddl).toContain('RENAME TO app2');
      } finally {
        await client.query('ROLLBACK');
      }
    }
    catalog = incremental;
    return incremental;
  }

  it('equals a full read after each kind of DDL', async () => {
    await step('CREATE TABLE app.t (id int PRIMARY KEY, v text)');
    expect(catalog.relations.get('app.t')?.columns.map((c) => c.name)).toEqual(['id', 'v']);
    expect(catalog.types?.has('app.t')).toBe(true);
    await step('ALTER TABLE app.users ADD COLUMN x int');
    await step('ALTER TABLE app.users RENAME COLUMN email TO mail');
    expect(catalog.relations.get('app.user_contacts')?.viewDefinition).toContain('users.mail');
    await step('ALTER TABLE app.users RENAME TO people');
    expect(catalog.relations.get('app.user_contacts')?.viewDefinition).toContain('app.people');
    expect(
      catalog.relations.get('app.orders')?.constraints?.find((c) => c.kind === 'foreign')?.references?.table,
    ).toBe('people');
    await step(
      'CREATE OR REPLACE VIEW app.user_contacts AS SELECT id, name, mail AS email, ssn FROM app.people',
    );
    await step('CREATE UNIQUE INDEX people_ssn ON app.people (ssn)');
    expect(catalog.relations.get('app.people')?.columns.find((c) => c.name === 'ssn')?.unique).toBe(true);
    await step('DROP INDEX app.people_ssn');
    expect(catalog.relations.get('app.people')?.columns.find((c) => c.name === 'ssn')?.unique).toBe(false);
    await step('ALTER TABLE app.orders DROP CONSTRAINT orders_user_id_fkey');
    await step('ALTER TABLE app.people ADD CONSTRAINT name_len CHECK (length(name) < 100)');
    await step('ALTER TABLE app.people DROP CONSTRAINT name_len');
    await step('ALTER TABLE app.people DROP COLUMN x');
    await step(
      'CREATE DOMAIN app.short AS text CHECK (length(VALUE) < 10); CREATE TABLE app.d (s app.short)',
    );
    expect(catalog.userCodeTypeOids?.has(catalog.types?.get('app.d')?.oid ?? -1)).toBe(true);
    await step('CREATE FUNCTION app.g() RETURNS int LANGUAGE sql AS $$SELECT 1$$; DROP FUNCTION app.f(int)');
    expect(catalog.functions.has('app.f')).toBe(false);
    await step('CREATE VIEW app.vg AS SELECT app.g() AS one');
    await step(
      'CREATE FUNCTION app.all_people() RETURNS SETOF app.people LANGUAGE sql AS $$SELECT * FROM app.people$$',
    );
    await step('ALTER TABLE app.people ADD COLUMN z int');
    expect(catalog.functions.get('app.all_people')?.[0]?.resultColumns?.map((c) => c.name)).toContain('z');
    await step('ALTER FUNCTION app.g() RENAME TO h');
    expect(catalog.relations.get('app.vg')?.viewDefinition).toContain('app.h()');
    await step('CREATE TABLE app.gen (a int, b int GENERATED ALWAYS AS (a * 2) STORED)');
    await step('CREATE RULE r AS ON UPDATE TO app.gen WHERE old.a > 1 DO INSTEAD NOTHING');
    expect(catalog.relations.get('app.gen')?.constraints?.map((c) => c.kind)).toEqual(['rule']);
    await step('ALTER TABLE app.gen DISABLE RULE r');
    await step('ALTER TABLE app.gen ENABLE RULE r');
    await step('DROP RULE r ON app.gen');
    expect(catalog.relations.get('app.gen')?.constraints).toEqual([]);
    await step('DROP TABLE app.t');
    expect(catalog.relations.has('app.t')).toBe(false);
    await step('ALTER SCHEMA app RENAME TO app2');
    expect(catalog.relations.has('app2.people')).toBe(true);
    await step('CREATE SCHEMA other; CREATE TABLE other.o (k int)');
  });

  it('is one query message that reads again only the relations the DDL touched', async () => {
    const reader = await connect(DB);
    try {
      let base = await readCatalog(reader, 200);
      await readCatalog(reader, 201, base); // the first incremental read prepares its statements
      const sent: string[] = [];
      const query = reader.query.bind(reader) as (...a: unknown[]) => Promise<unknown>;
      (reader as unknown as { query: (...a: unknown[]) => Promise<unknown> }).query = (...a: unknown[]) => {
        sent.push(String(typeof a[0] === 'string' ? a[0] : (a[0] as { text: string }).text));
        return query(...a);
      };
      base = await readCatalog(reader, 202, base);
      await client.query('ALTER TABLE app2.people ADD COLUMN touched int');
      sent.length = 0;
      const inc = await readCatalog(reader, 203, base);
      expect(sent.length).toBe(1);
      expect(inc.relations.get('app2.people')?.columns.map((c) => c.name)).toContain('touched');
      // Re-read: the table and the view that reads it; everything else is the earlier object.
      const reread = [...inc.relations].filter(([k, r]) => base.relations.get(k) !== r).map(([k]) => k);
      expect(reread.sort()).toEqual(['app2.people', 'app2.user_contacts']);
      // System functions are kept from the earlier read, never read again.
      expect(inc.functions.get('pg_catalog.now')?.[0]).toBe(base.functions.get('pg_catalog.now')?.[0]);
      await client.query('ALTER TABLE app2.people DROP COLUMN touched');
    } finally {
      await reader.end();
    }
  });

  it('is cheaper than a full read: it reads again only what changed (timings logged; bench/ compares them)', async () => {
    const times = { full: [] as number[], incremental: [] as number[] };
    // Up to date first: the tests before changed tables this catalog has not seen.
    catalog = await readCatalog(client, catalog.version + 1, catalog);
    for (let i = 0; i < 5; i++) {
      await client.query(`CREATE TABLE other.c${i} (id int PRIMARY KEY, v text)`);
      let t0 = performance.now();
      const inc = await readCatalog(client, catalog.version + 1, catalog);
      times.incremental.push(performance.now() - t0);
      // The work saved, counted rather than timed (a loaded machine's timings can invert):
      // every relation but the new table is the earlier read's object.
      const reread = [...inc.relations].filter(([k, r]) => catalog.relations.get(k) !== r).map(([k]) => k);
      expect(reread).toEqual([`other.c${i}`]);
      t0 = performance.now();
      await readCatalog(client, catalog.version + 1);
      times.full.push(performance.now() - t0);
      catalog = inc;
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[2]!;
    console.log(
      `catalog read after CREATE TABLE: full median ${median(times.full).toFixed(1)} ms, ` +
        `incremental median ${median(times.incremental).toFixed(1)} ms`,
    );
  });

  it('does not wait for a view whose table another session holds locked, and reads it once free', async () => {
    await other.query('BEGIN');
    await other.query('ALTER TABLE app2.people ADD COLUMN locked int');
    try {
      const t0 = performance.now();
      // A full read: the view's definition would wait for the lock; it is left pending instead.
      const full = await readCatalog(client, 100);
      expect(performance.now() - t0).toBeLessThan(5000);
      expect(full.relations.get('app2.user_contacts')?.viewDefinition).toBeNull();
      expect([...(catalogStamp(full)?.pending.values() ?? [])]).toEqual(['app2.user_contacts']);
      // Incremental on a catalog that has the definition: nothing it reads changed, it is kept.
      const inc = await readCatalog(client, 101, catalog);
      expect(inc.relations.get('app2.user_contacts')?.viewDefinition).toContain('app2.people');
      expect(catalogStamp(inc)?.pending.size).toBe(0);
      // The uncommitted column is not there (other sessions do not see it).
      expect(inc.relations.get('app2.people')?.columns.some((c) => c.name === 'locked')).toBe(false);
      catalog = full;
    } finally {
      await other.query('ROLLBACK');
    }
    // Once free, the pending view is read again.
    const after = await readCatalog(client, 102, catalog);
    expect(after.relations.get('app2.user_contacts')?.viewDefinition).toContain('app2.people');
    expect(catalogStamp(after)?.pending.size).toBe(0);
  });
});

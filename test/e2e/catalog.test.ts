// Reads real catalogs from the embedded PostgreSQL 15: the demo database, and a scratch database with views, generated columns and indexes.
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CatalogCache } from '../../src/catalog/catalog-cache.js';
import { readCatalog } from '../../src/catalog/read-catalog.js';
import type { Catalog, CatalogRelation } from '../../src/catalog/types.js';

const server = inject('pg');
const APP = { user: 'pgwarden_app', password: 'pgwarden-app-demo' };
const SCRATCH_DB = 'catalog_t';

function connect(database: string, who: { user: string; password: string } = APP): Promise<pg.Client> {
  const client = new pg.Client({ host: server.host, port: server.port, database, ...who });
  return client.connect().then(() => client);
}

function rel(c: Catalog, key: string): CatalogRelation {
  const r = c.relations.get(key);
  if (!r) throw new Error(`relation ${key} missing from the catalog`);
  return r;
}

describe('readCatalog on the demo database', () => {
  let client: pg.Client;
  let catalog: Catalog;

  beforeAll(async () => {
    client = await connect('demo');
    catalog = await readCatalog(client, 7);
  });
  afterAll(async () => {
    await client.end();
  });

  it('is fast: one round trip (timings logged)', async () => {
    const times: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      await readCatalog(client, i);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const median = times[3]!;
    console.log(
      `readCatalog(demo): ${catalog.relations.size} relations, ${[...catalog.functions.values()].flat().length} functions; ` +
        `min ${times[0]!.toFixed(1)} ms, median ${median.toFixed(1)} ms, max ${times[6]!.toFixed(1)} ms`,
    );
    // One round trip; a loaded machine's median can reach seconds (bench/ holds the real target).
    expect(median).toBeLessThan(5000);
  });

  it('stamps the version and reads server facts and the login search_path', () => {
    expect(catalog.version).toBe(7);
    expect(catalog.serverVersionNum).toBeGreaterThanOrEqual(150000);
    expect(catalog.serverVersionNum).toBeLessThan(160000);
    // "$user" has no schema for pgwarden_app: current_schemas drops it.
    expect(catalog.defaultSearchPath).toEqual(['public']);
    for (const ns of ['pg_catalog', 'information_schema', 'public', 'pg_toast']) {
      expect(catalog.namespaces.has(ns), ns).toBe(true);
    }
  });

  it('public.users: columns, attnums, types, uniqueness and OID', async () => {
    const users = rel(catalog, 'public.users');
    expect(users.kind).toBe('table');
    expect(users.schema).toBe('public');
    expect(users.name).toBe('users');
    expect(users.viewDefinition).toBeNull();
    expect(users.columns.map((c) => c.name)).toEqual(['id', 'name', 'email', 'ssn', 'org_id']);
    expect(users.columns.map((c) => c.attnum)).toEqual([1, 2, 3, 4, 5]);
    const [id, name, email, ssn, orgId] = users.columns;
    expect(id).toMatchObject({
      typeOid: 23,
      typeName: 'integer',
      notNull: true,
      unique: true,
      generated: null,
    });
    expect(id?.generatedFrom).toEqual([]);
    expect(name).toMatchObject({ typeOid: 25, typeName: 'text', notNull: true, unique: false });
    expect(email).toMatchObject({ typeName: 'text', notNull: false, unique: false });
    expect(ssn?.unique).toBe(false);
    expect(orgId).toMatchObject({ typeOid: 23, unique: false });
    const oid = await client.query(`SELECT 'users'::regclass::oid AS oid`);
    expect(users.oid).toBe(oid.rows[0].oid);
    const amount = rel(catalog, 'public.orders').columns.find((c) => c.name === 'amount');
    expect(amount).toMatchObject({ typeOid: 1700, typeName: 'numeric(10,2)' });
  });

  it('pg_catalog: functions with volatility and kind, catalog relations', () => {
    const lower = catalog.functions.get('pg_catalog.lower');
    expect(lower?.length).toBeGreaterThan(0);
    const lowerText = lower?.find((f) => f.argTypes.length === 1 && f.argTypes[0] === 25);
    expect(lowerText).toMatchObject({
      schema: 'pg_catalog',
      name: 'lower',
      returnType: 25,
      returnsSet: false,
      volatility: 'immutable',
      kind: 'function',
    });
    expect(catalog.functions.get('pg_catalog.now')?.[0]?.volatility).toBe('stable');
    expect(catalog.functions.get('pg_catalog.random')?.[0]?.volatility).toBe('volatile');
    expect(catalog.functions.get('pg_catalog.count')?.every((f) => f.kind === 'aggregate')).toBe(true);
    expect(catalog.functions.get('pg_catalog.row_number')?.[0]?.kind).toBe('window');
    expect(catalog.functions.get('pg_catalog.generate_series')?.every((f) => f.returnsSet)).toBe(true);
    expect(catalog.functions.get('pg_catalog.now')?.[0]?.argTypes).toEqual([]);
    expect(catalog.functions.size).toBeGreaterThan(2000);
    expect(rel(catalog, 'pg_catalog.pg_class').kind).toBe('table');
    expect(rel(catalog, 'pg_catalog.pg_stats').kind).toBe('view');
    expect(rel(catalog, 'information_schema.columns').kind).toBe('view');
    const attnums = rel(catalog, 'pg_catalog.pg_class').columns.map((c) => c.attnum);
    expect(attnums).toEqual([...attnums].sort((a, b) => a - b));
  });

  it('leaves the session as it found it (no open transaction, same search_path)', async () => {
    await client.query('SET search_path = public, pg_temp');
    await readCatalog(client, 1);
    expect((await client.query('SHOW search_path')).rows[0].search_path).toBe('public, pg_temp');
    await client.query('RESET search_path');
    // A second BEGIN would warn if our transaction had been left open; pg surfaces it as a notice.
    const notices: string[] = [];
    const onNotice = (n: { message?: string }) => notices.push(n.message ?? '');
    client.on('notice', onNotice);
    await client.query('BEGIN');
    await client.query('ROLLBACK');
    client.off('notice', onNotice);
    expect(notices).toEqual([]);
  });

  it('rolls back and rejects with the server error when a read fails', async () => {
    const other = await connect('demo');
    try {
      // A statement_timeout that fires inside the read: 57014 query_canceled.
      await other.query(`SET statement_timeout = '1ms'`);
      let failure: unknown;
      for (let i = 0; i < 20 && failure === undefined; i++) {
        await readCatalog(other, 1).catch((e: unknown) => {
          failure = e;
        });
      }
      expect((failure as { code?: string } | undefined)?.code).toBe('57014');
      await other.query('RESET statement_timeout');
      // The session is usable again: not left in an aborted transaction.
      expect((await other.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      expect((await readCatalog(other, 2)).version).toBe(2);
    } finally {
      await other.end();
    }
  });

  it('returns an immutable value', () => {
    const users = rel(catalog, 'public.users');
    expect(Object.isFrozen(users)).toBe(true);
    expect(Object.isFrozen(users.columns)).toBe(true);
    expect(Object.isFrozen(users.columns[0])).toBe(true);
  });
});

describe('readCatalog on a scratch database', () => {
  let admin: pg.Client;
  let client: pg.Client;
  let catalog: Catalog;

  beforeAll(async () => {
    admin = await connect('postgres', { user: server.superuser, password: server.superuserPassword });
    await admin.query(`DROP DATABASE IF EXISTS ${SCRATCH_DB} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${SCRATCH_DB} OWNER ${APP.user}`);
    // The login's path: "$user" resolves once its schema exists; a missing schema is dropped.
    await admin.query(
      `ALTER DATABASE ${SCRATCH_DB} SET search_path = scratch, "$user", missing_schema, public, scratch`,
    );
    const setup = await connect(SCRATCH_DB);
    try {
      await setup.query(`
        CREATE SCHEMA scratch;
        CREATE SCHEMA pgwarden_app;
        CREATE TABLE scratch.t (
          a int,
          gone int,
          b text NOT NULL,
          c text GENERATED ALWAYS AS (upper(b) || a::text) STORED,
          d int,
          e text,
          f text,
          g int,
          CONSTRAINT d_excl EXCLUDE USING btree (d WITH =)
        );
        ALTER TABLE scratch.t DROP COLUMN gone;
        CREATE UNIQUE INDEX t_a_incl ON scratch.t (a) INCLUDE (e);
        CREATE UNIQUE INDEX t_lower_f ON scratch.t (lower(f)) WHERE g > 0;
        CREATE VIEW scratch.v AS SELECT a, b AS bee FROM scratch.t WHERE d > 0;
        CREATE MATERIALIZED VIEW scratch.mv AS SELECT count(*) AS n FROM scratch.t;
        CREATE SEQUENCE scratch.s;
        CREATE TABLE scratch.parted (k int PRIMARY KEY, v text) PARTITION BY RANGE (k);
        CREATE FUNCTION scratch.f(x int, y text) RETURNS SETOF int LANGUAGE sql VOLATILE AS 'SELECT x';
        CREATE FUNCTION scratch.f(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT x';
        CREATE FUNCTION scratch.g(x int, OUT y int, OUT z text) LANGUAGE sql IMMUTABLE AS 'SELECT x, x::text';
        CREATE PROCEDURE scratch.p(x int) LANGUAGE sql AS 'SELECT 1';
      `);
    } finally {
      await setup.end();
    }
    client = await connect(SCRATCH_DB);
    catalog = await readCatalog(client, 1);
  });

  afterAll(async () => {
    await client?.end();
    await admin?.query(`DROP DATABASE IF EXISTS ${SCRATCH_DB} WITH (FORCE)`);
    await admin?.end();
  });

  it('resolves the login search_path like current_schemas(false)', () => {
    expect(catalog.defaultSearchPath).toEqual(['scratch', 'pgwarden_app', 'public']);
  });

  it('leaves dropped columns out and keeps attnums', () => {
    const t = rel(catalog, 'scratch.t');
    expect(t.columns.map((c) => [c.name, c.attnum])).toEqual([
      ['a', 1],
      ['b', 3],
      ['c', 4],
      ['d', 5],
      ['e', 6],
      ['f', 7],
      ['g', 8],
    ]);
  });

  it('reports generated columns with the columns they read', () => {
    const c = rel(catalog, 'scratch.t').columns.find((col) => col.name === 'c');
    expect(c?.generated).toMatch(/upper\(b\)/);
    expect(c?.generatedFrom).toEqual(['a', 'b']);
    const b = rel(catalog, 'scratch.t').columns.find((col) => col.name === 'b');
    expect(b).toMatchObject({ generated: null, generatedFrom: [], notNull: true });
  });

  it('marks unique, exclusion, expression and predicate columns; not INCLUDE columns', () => {
    const unique = Object.fromEntries(rel(catalog, 'scratch.t').columns.map((c) => [c.name, c.unique]));
    expect(unique).toEqual({ a: true, b: false, c: false, d: true, e: false, f: true, g: true });
    const parted = rel(catalog, 'scratch.parted');
    expect(parted.kind).toBe('partitioned');
    expect(parted.columns.map((c) => [c.name, c.unique])).toEqual([
      ['k', true],
      ['v', false],
    ]);
  });

  it('returns view definitions schema-qualified, and relation kinds', () => {
    const v = rel(catalog, 'scratch.v');
    expect(v.kind).toBe('view');
    expect(v.viewDefinition).toMatch(/FROM scratch\.t\b/);
    expect(v.viewDefinition).toMatch(/b AS bee/);
    expect(v.columns.map((c) => c.name)).toEqual(['a', 'bee']);
    const mv = rel(catalog, 'scratch.mv');
    expect(mv.kind).toBe('matview');
    expect(mv.viewDefinition).toMatch(/count\(\*\)/);
    expect(rel(catalog, 'scratch.s').kind).toBe('sequence');
    expect(rel(catalog, 'scratch.s').viewDefinition).toBeNull();
    expect(catalog.relations.has('scratch.t_a_incl')).toBe(false); // indexes are not relations here
  });

  it('lists overloads, set-returning functions and procedures with input argument types only', () => {
    const f = catalog.functions.get('scratch.f') ?? [];
    expect(f.map((x) => x.argTypes).sort((x, y) => x.length - y.length)).toEqual([[23], [23, 25]]);
    expect(f.find((x) => x.argTypes.length === 2)).toMatchObject({
      returnsSet: true,
      volatility: 'volatile',
    });
    expect(f.find((x) => x.argTypes.length === 1)).toMatchObject({ returnsSet: false, volatility: 'stable' });
    expect(catalog.functions.get('scratch.g')?.[0]).toMatchObject({
      argTypes: [23],
      volatility: 'immutable',
    });
    expect(catalog.functions.get('scratch.p')?.[0]).toMatchObject({ kind: 'procedure', argTypes: [23] });
  });
});

describe('CatalogCache', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = await connect('demo');
  });
  afterAll(async () => {
    await client.end();
  });

  it('loads once, serves the cached catalog, and bumps the version on invalidate', async () => {
    const cache = new CatalogCache();
    let loads = 0;
    const loader = (v: number) => {
      loads++;
      return readCatalog(client, v);
    };
    const first = await cache.get('demo', loader);
    expect(first.version).toBe(1);
    expect(await cache.get('demo', loader)).toBe(first);
    expect(cache.peek('demo')).toBe(first);
    expect(loads).toBe(1);
    cache.invalidate('demo');
    expect(cache.peek('demo')).toBeUndefined();
    const second = await cache.get('demo', loader);
    expect(second.version).toBe(2);
    expect(loads).toBe(2);
    expect(rel(second, 'public.users').oid).toBe(rel(first, 'public.users').oid);
    // Versions are per key.
    expect((await cache.get('other', loader)).version).toBe(1);
  });

  it('single-flight: concurrent gets share one load', async () => {
    const cache = new CatalogCache();
    let loads = 0;
    const loader = (v: number) => {
      loads++;
      return readCatalog(client, v);
    };
    const [a, b, c] = await Promise.all([
      cache.get('demo', loader),
      cache.get('demo', loader),
      cache.get('demo', loader),
    ]);
    expect(loads).toBe(1);
    expect(a).toBe(b);
    expect(b).toBe(c);
  });

  it('does not keep a load that was running when invalidate was called', async () => {
    const cache = new CatalogCache();
    const fake = (v: number): Catalog => ({
      version: v,
      serverVersionNum: 150000,
      defaultSearchPath: [],
      namespaces: new Set(),
      relations: new Map(),
      functions: new Map(),
    });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = cache.get('db', async (v) => {
      await gate;
      return fake(v);
    });
    cache.invalidate('db');
    const fresh = cache.get('db', async (v) => fake(v));
    release();
    expect((await slow).version).toBe(1);
    expect((await fresh).version).toBe(2);
    expect(cache.peek('db')?.version).toBe(2);
  });

  it('does not cache failures, and never reuses a version', async () => {
    const cache = new CatalogCache();
    const boom = Object.assign(new Error('boom'), { code: '57014' });
    await expect(cache.get('db', () => Promise.reject(boom))).rejects.toBe(boom);
    await expect(
      cache.get('db', () => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    const ok = await cache.get('db', (v) => readCatalog(client, v));
    expect(ok.version).toBe(3);
  });

  it('reloads after the TTL with a higher version', async () => {
    // A TTL a loaded machine cannot outlast between two back-to-back reads (50 ms could: the second read reloaded).
    const cache = new CatalogCache({ ttlMs: 1000 });
    let loads = 0;
    const loader = (v: number) => {
      loads++;
      return readCatalog(client, v);
    };
    expect((await cache.get('demo', loader)).version).toBe(1);
    expect((await cache.get('demo', loader)).version).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await cache.get('demo', loader)).version).toBe(2);
    expect(loads).toBe(2);
  });

  it('re-stamps a catalog whose loader ignored the version', async () => {
    const cache = new CatalogCache();
    const c = await cache.get('db', () => readCatalog(client, 99));
    expect(c.version).toBe(1);
  });
});

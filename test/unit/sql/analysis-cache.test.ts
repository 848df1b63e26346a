// The analysis cache: exact-text hits, normalized-text sharing only where no literal matters, pgbench -S hit rate.
import { beforeAll, describe, expect, it } from 'vitest';
import { analyze, createAnalysisCache, loadParser } from '../../../src/sql/analyze.js';
import { normalizedKey } from '../../../src/sql/normalize.js';
import { loadedParser } from '../../../src/sql/parser.js';
import { loadDemoCatalog, pgbenchCatalog } from '../../fixtures/demo-catalog.js';

function key(sql: string): string | null {
  const parser = loadedParser(15);
  const out = parser?.parse(sql);
  if (!out?.ok) throw new Error(sql);
  return normalizedKey(out.parsed);
}

beforeAll(async () => {
  await loadParser(15);
});

describe('normalizedKey', () => {
  it('is equal for texts differing only in literal values of the same class and length', () => {
    expect(key('SELECT name FROM users WHERE id = 12')).toBe(key('SELECT name FROM users WHERE id = 99'));
    expect(key("SELECT 1 FROM users WHERE name = 'ab'")).toBe(key("SELECT 1 FROM users WHERE name = 'xy'"));
  });
  it('differs when a literal changes class or length, or the text anything else', () => {
    const base = key('SELECT name FROM users WHERE id = 12');
    expect(key('SELECT name FROM users WHERE id = 123')).not.toBe(base);
    expect(key("SELECT name FROM users WHERE id = '1'")).not.toBe(base);
    expect(key('SELECT name FROM users WHERE id = 1.')).not.toBe(base);
    expect(key('SELECT email FROM users WHERE id = 12')).not.toBe(base);
  });
  it('keeps literals whose value the analysis reads', () => {
    expect(key('SELECT id, name FROM users ORDER BY 1')).not.toBe(
      key('SELECT id, name FROM users ORDER BY 2'),
    );
    expect(key('SELECT id, name FROM users GROUP BY 1, 2')).not.toBe(
      key('SELECT id, name FROM users GROUP BY 2, 1'),
    );
    expect(key("SELECT 'users'::regclass")).not.toBe(key("SELECT 'orders'::regclass"));
  });
  it('is null for a statement calling set_config: it reads literals outside its arguments too', () => {
    expect(key("SELECT set_config('search_path', 'ab', false)")).toBeNull();
    expect(key("SELECT set_config(name, 'x', false) FROM pg_settings WHERE name = 'search_path'")).toBeNull();
  });
  it('is null for non-row statements, SELECT INTO and non-ASCII text', () => {
    expect(key("SET search_path = 'x'")).toBeNull();
    expect(key('SELECT 1 INTO t')).toBeNull();
    expect(key("SELECT 'é'")).toBeNull();
    expect(key('BEGIN; SELECT 1')).toBeNull();
  });
});

describe('AnalysisCache', () => {
  it('returns the same analysis as analyze() for every kind of string', () => {
    const catalog = loadDemoCatalog();
    const cache = createAnalysisCache();
    for (const sql of [
      'SELECT name FROM users WHERE id = 1',
      'SET search_path TO app; SELECT * FROM users',
      'SELECT 1 +',
      "SELECT pg_read_file('x')",
      'COPY users TO STDOUT',
    ]) {
      const opts = { catalog, searchPath: ['public'] };
      expect(cache.analyze(sql, opts)).toEqual(analyze(sql, opts));
      expect(cache.analyze(sql, opts)).toEqual(analyze(sql, opts));
    }
  });
  it('keys on the search path and the catalog', () => {
    const catalog = loadDemoCatalog();
    const cache = createAnalysisCache();
    const a = cache.analyze('SELECT id FROM users', { catalog, searchPath: ['public'] });
    const b = cache.analyze('SELECT id FROM users', { catalog, searchPath: ['app'] });
    expect(a.statements[0]?.requirements[0]).toMatchObject({ object: { schema: 'public' } });
    expect(b.statements[0]?.requirements[0]).toMatchObject({ object: { schema: 'app' } });
    const other = { ...catalog, version: catalog.version + 1 };
    cache.analyze('SELECT id FROM users', { catalog: other, searchPath: ['public'] });
    expect(cache.stats()).toEqual({ hits: 0, normalizedHits: 0, misses: 3 });
  });
  it('never shares an analysis with session effects', () => {
    const catalog = loadDemoCatalog();
    const cache = createAnalysisCache();
    const a = cache.analyze("SELECT set_config('search_path', 'ap', false)", {
      catalog,
      searchPath: ['public'],
    });
    const b = cache.analyze("SELECT set_config('search_path', 'pu', false)", {
      catalog,
      searchPath: ['public'],
    });
    expect(a.statements[0]?.sessionEffects).toEqual([
      { kind: 'set-search-path', path: ['ap'], local: false },
    ]);
    expect(b.statements[0]?.sessionEffects).toEqual([
      { kind: 'set-search-path', path: ['pu'], local: false },
    ]);
  });
  it('serves a pgbench -S stream at ≥ 99.9% from the cache', () => {
    const catalog = pgbenchCatalog();
    const cache = createAnalysisCache();
    const opts = { catalog, searchPath: ['public'] };
    let seed = 42;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed;
    };
    const n = 20_000;
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) {
      const aid = (rnd() % 100_000) + 1;
      const a = cache.analyze(`SELECT abalance FROM pgbench_accounts WHERE aid = ${aid};`, opts);
      if (i === 0) {
        expect(a.statements[0]?.requirements.map((r) => r.action)).toEqual(['SELECT', 'SELECT', 'SELECT']);
      }
    }
    const perQueryUs = Number(process.hrtime.bigint() - started) / 1000 / n;
    const s = cache.stats();
    const hitRate = (s.hits + s.normalizedHits) / n;
    console.log(
      `pgbench -S stream: ${n} queries, hit rate ${(hitRate * 100).toFixed(3)}%, ${perQueryUs.toFixed(1)} µs/query`,
      s,
    );
    expect(hitRate).toBeGreaterThanOrEqual(0.999);
  });
});

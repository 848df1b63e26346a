// The lexical cache key: literals of the same kind and length share a key; anything unusual parses.
import { beforeAll, describe, expect, test } from 'vitest';
import { createAnalysisCache } from '../../../src/sql/analyze.js';
import { lexicalKey } from '../../../src/sql/lexical-key.js';
import { loadParser } from '../../../src/sql/parser.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

beforeAll(async () => {
  await loadParser(15);
});

describe('lexicalKey', () => {
  test('pgbench -S statements with literals of one length share a key', () => {
    const a = lexicalKey('SELECT abalance FROM pgbench_accounts WHERE aid = 48213;');
    expect(a).not.toBeNull();
    expect(lexicalKey('SELECT abalance FROM pgbench_accounts WHERE aid = 90210;')).toBe(a);
    expect(lexicalKey('SELECT abalance FROM pgbench_accounts WHERE aid = 4821;')).not.toBe(a);
  });

  test('string literals of one length share a key; digits inside names stay', () => {
    expect(lexicalKey("select id from t1 where name = 'ab''c'")).toBe(
      lexicalKey("select id from t1 where name = 'xyzzy'"),
    );
    expect(lexicalKey('select c2 from t1')).not.toBe(lexicalKey('select c3 from t1'));
  });

  test('anything the scan could read differently from the server parses instead', () => {
    for (const sql of [
      "select E'a\\\\b'",
      "select x'1f'",
      "select U&'d\\0061t'",
      'select $1',
      'select "Id" from t',
      'select 1 -- comment',
      'select /* c */ 1',
      'select 1.5',
      'select .5',
      'select 1e5',
      'select 1234567890',
      'select 1x5',
      "select 'é'",
      "select 'unterminated",
      'select $$a$$',
    ]) {
      expect(lexicalKey(sql), sql).toBeNull();
    }
  });
});

describe('the analysis cache serves lexical hits without parsing', () => {
  test('same shape, other literals: a hit; an analysis that reads a literal never shares', () => {
    const cache = createAnalysisCache();
    const opts = { catalog: loadDemoCatalog(), searchPath: ['public'] };
    const first = cache.analyze('select name from users where id = 12', opts);
    expect(first.refusal).toBeUndefined();
    const before = cache.stats();
    const second = cache.analyze('select name from users where id = 34', opts);
    expect(second).toBe(first);
    expect(cache.stats().hits).toBe(before.hits + 1);
    expect(cache.stats().normalizedHits).toBe(before.normalizedHits);

    // A reg* cast's literal names a relation: the analyses differ and are never shared.
    const users = cache.analyze("select 'users'::regclass", opts);
    const orgs = cache.analyze("select 'orgs_'::regclass", opts);
    expect(orgs).not.toBe(users);
    // An ORDER BY ordinal is read by the analysis too.
    const byOne = cache.analyze('select id, name from users order by 1', opts);
    const byTwo = cache.analyze('select id, name from users order by 2', opts);
    expect(byTwo).not.toBe(byOne);
    expect(
      byTwo.statements[0]?.uses.some((u) => u.use === 'test' && 'column' in u && u.column === 'name'),
    ).toBe(true);
  });
});

// pgwarden_catalog.* (what the in-band catalog read hands between its statements) reads as a setting that does not exist: 42704, as Postgres without pgwarden answers.
import { beforeAll, describe, expect, test } from 'vitest';
import { analyze } from '../../../src/sql/analyze.js';
import { loadParser } from '../../../src/sql/parser.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

const catalog = loadDemoCatalog();
beforeAll(async () => {
  await loadParser(15);
});
const refusal = (sql: string) => analyze(sql, { catalog, searchPath: ['public'] }).refusal;

describe('pgwarden_catalog.* settings', () => {
  test('SHOW of one: 42704 unrecognized configuration parameter, without a position (the name as the parser gives it)', () => {
    for (const [sql, name] of [
      ['SHOW pgwarden_catalog.reread', 'pgwarden_catalog.reread'],
      ['show PGWARDEN_CATALOG.Types_Changed', 'pgwarden_catalog.types_changed'],
      ['SHOW "PGWARDEN_CATALOG.x"', 'PGWARDEN_CATALOG.x'],
      ['SHOW pgwarden_catalog.anything_else', 'pgwarden_catalog.anything_else'],
    ] as const) {
      expect(refusal(sql), sql).toEqual({
        sqlstate: '42704',
        message: `unrecognized configuration parameter "${name}"`,
      });
    }
  });

  test('current_setting of one named by a constant: the same error', () => {
    for (const sql of [
      "select current_setting('pgwarden_catalog.reread')",
      "select pg_catalog.current_setting('pgwarden_catalog.reread', true)",
      "select id from users where current_setting('pgwarden_catalog.reread'::text) = ''",
    ]) {
      expect(refusal(sql), sql).toEqual({
        sqlstate: '42704',
        message: 'unrecognized configuration parameter "pgwarden_catalog.reread"',
      });
    }
  });

  test('other settings are read as before', () => {
    expect(refusal('SHOW search_path')).toBeUndefined();
    expect(refusal('SHOW ALL')).toBeUndefined();
    expect(refusal("select current_setting('pgwarden.identity')")).toBeUndefined();
    expect(refusal("select current_setting('server_version_num')")).toBeUndefined();
  });
});

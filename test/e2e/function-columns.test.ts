// Functions in FROM: pgwarden's columns equal what PostgreSQL reports for every set-returning pg_catalog function callable with sample arguments.
import { loadModule } from 'libpg-query';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readCatalog } from '../../src/catalog/read-catalog.js';
import type { Catalog } from '../../src/catalog/types.js';
import { analyze } from '../../src/sql/analyze.js';
import { loadParser } from '../../src/sql/parser.js';

const server = inject('pg');

/** A sample value per input type (format_type spelling), cast explicitly so the overload is unambiguous. */
const SAMPLES: Readonly<Record<string, string>> = {
  boolean: 'true',
  smallint: '1',
  integer: '1',
  bigint: '1',
  numeric: '1',
  real: '1',
  'double precision': '1',
  text: "'a'",
  name: "'pg_class'",
  'character varying': "'a'",
  oid: '1259',
  regclass: "'pg_class'",
  regproc: "'now'",
  regtype: "'int4'",
  regconfig: "'english'",
  json: `'{"a":1}'`,
  jsonb: `'{"a":1}'`,
  jsonpath: "'$.a'",
  tsvector: "'a:1'",
  tsquery: "'a'",
  'timestamp without time zone': "'2020-01-01'",
  'timestamp with time zone': "'2020-01-01'",
  interval: "'1 day'",
  xid: "'1'",
  xid8: "'1'",
  pg_lsn: "'0/0'",
  'text[]': "'{a}'",
  'integer[]': "'{1}'",
  'oid[]': "'{1259}'",
  'smallint[]': "'{1}'",
  anyarray: "'{1}'::int[]",
  anyelement: '1::int',
  anycompatible: '1::int',
  anymultirange: "'{[1,2]}'::int4multirange",
  bytea: "'\\x00'",
  inet: "'127.0.0.1'",
  '"char"': "'a'",
  tid: "'(0,1)'",
};

interface Srf {
  proname: string;
  args: string[];
}

let direct: pg.Client;
let catalog: Catalog;

beforeAll(async () => {
  await loadModule();
  await loadParser(15);
  direct = new pg.Client({
    host: server.host,
    port: server.port,
    user: server.superuser,
    password: server.superuserPassword,
    database: 'demo',
  });
  await direct.connect();
  catalog = await readCatalog(direct, 1);
});
afterAll(async () => {
  await direct.end();
});

function call(f: Srf): string | null {
  const args: string[] = [];
  for (const t of f.args) {
    const v = SAMPLES[t];
    if (v === undefined) return null;
    args.push(v.includes('::') ? v : `${v}::${t}`);
  }
  return `SELECT * FROM pg_catalog.${f.proname}(${args.join(', ')}) AS t LIMIT 0`;
}

/** The columns pgwarden's analysis gives `sql` (names), or its refusal. */
function pgwardenColumns(sql: string): string[] | string {
  const a = analyze(sql, { catalog, searchPath: ['public'] });
  if (a.refusal) return `${a.refusal.sqlstate} ${a.refusal.message}`;
  return (a.statements[0]?.resultColumns ?? []).map((c) => c.name);
}

describe('set-returning functions in FROM', () => {
  it('have the columns PostgreSQL reports, for every pg_catalog SRF callable with sample arguments', async () => {
    const { rows } = await direct.query<Srf>(`
      SELECT p.proname::text AS proname,
             ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) t)::text[] AS args
        FROM pg_proc p
       WHERE p.proretset AND p.prokind = 'f' AND p.pronamespace = 'pg_catalog'::regnamespace
       ORDER BY 1, 2`);
    const mismatches: string[] = [];
    let compared = 0;
    let uncallable = 0;
    await direct.query('BEGIN');
    for (const f of rows) {
      const sql = call(f);
      if (!sql) {
        uncallable++;
        continue;
      }
      await direct.query('SAVEPOINT s');
      let pgColumns: string[];
      try {
        pgColumns = (await direct.query(sql)).fields.map((x) => x.name);
      } catch {
        uncallable++;
        await direct.query('ROLLBACK TO SAVEPOINT s');
        continue;
      }
      compared++;
      const mine = pgwardenColumns(sql);
      if (JSON.stringify(mine) !== JSON.stringify(pgColumns))
        mismatches.push(`${sql}: postgres ${JSON.stringify(pgColumns)}, pgwarden ${JSON.stringify(mine)}`);
    }
    await direct.query('ROLLBACK');
    console.log(
      `SRFs: ${rows.length}, compared ${compared}, not callable with sample arguments ${uncallable}`,
    );
    expect(mismatches).toEqual([]);
    expect(compared).toBeGreaterThan(80);
  });

  it('name OUT parameters, single scalar results, composite types, RETURNS TABLE and definition lists as PostgreSQL does', async () => {
    await direct.query(`
      CREATE SCHEMA IF NOT EXISTS fcols;
      CREATE OR REPLACE FUNCTION fcols.tab(n int) RETURNS TABLE (a int, b text) LANGUAGE sql AS 'SELECT n, n::text';
      CREATE OR REPLACE FUNCTION fcols.one_out(n int, OUT only_one int) RETURNS SETOF int LANGUAGE sql AS 'SELECT n';
      CREATE TABLE IF NOT EXISTS fcols.pair (x int, y text);
      CREATE OR REPLACE FUNCTION fcols.pairs() RETURNS SETOF fcols.pair LANGUAGE sql AS 'SELECT 1, ''a''';
      CREATE OR REPLACE FUNCTION fcols.recs() RETURNS SETOF record LANGUAGE sql AS 'SELECT 1, ''a''';`);
    catalog = await readCatalog(direct, 2);
    const cases = [
      "SELECT x.value FROM jsonb_array_elements('[1,2]') x",
      `SELECT t.* FROM json_each_text('{"a":1}') t`,
      'SELECT * FROM generate_series(1, 3) g',
      'SELECT * FROM generate_series(1, 3) g(n)',
      'SELECT * FROM generate_series(1, 3) WITH ORDINALITY',
      "SELECT * FROM unnest('{1,2}'::int[], '{a}'::text[]) u",
      "SELECT * FROM unnest('a:1 b:2'::tsvector)",
      'SELECT * FROM fcols.tab(1) t',
      'SELECT * FROM fcols.one_out(1) t',
      'SELECT * FROM fcols.pairs() p',
      'SELECT * FROM fcols.pairs() p(c)',
      'SELECT * FROM fcols.recs() AS r(i int, s text)',
      'SELECT * FROM ROWS FROM (fcols.tab(1), generate_series(1, 2), fcols.recs() AS (i int, s text)) r',
      `SELECT * FROM jsonb_populate_record(null::fcols.pair, '{"x":1}')`,
      `SELECT * FROM jsonb_to_recordset('[{"a":1}]') AS r(a int)`,
      // Django's get_constraints: unnest over int2vector columns.
      'SELECT * FROM pg_index i, unnest(i.indkey, i.indoption) WITH ORDINALITY koi(key, option, arridx)',
      'SELECT koi.* FROM pg_proc p, unnest(p.proargtypes) koi',
    ];
    for (const sql of cases) {
      const pgColumns = (await direct.query(`${sql} LIMIT 0`)).fields.map((x) => x.name);
      expect(pgwardenColumns(sql), sql).toEqual(pgColumns);
    }
    const errors = [
      'SELECT * FROM fcols.recs() r',
      'SELECT * FROM fcols.tab(1) AS t(a int, b text)',
      "SELECT * FROM jsonb_each('{}') AS t(k text, v jsonb)",
      'SELECT * FROM fcols.pairs() AS p(x int, y text)',
      'SELECT * FROM generate_series(1, 2) AS g(n int)',
    ];
    for (const sql of errors) {
      const err = await direct.query(sql).then(
        () => null,
        (e: pg.DatabaseError) => `${e.code} ${e.message}`,
      );
      expect(pgwardenColumns(sql), sql).toEqual(err);
    }
    await direct.query('DROP SCHEMA fcols CASCADE');
  });
});

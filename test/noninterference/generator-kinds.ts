// Generated statements of the kinds issue 13 found: whole rows carried through merges of rows, and names scoped as Postgres scopes them.
import type { Pick, Table } from './generator.js';

/** A column of `t`: hidden with probability `hiddenP` (percent) when `t` has one. */
function col(p: Pick, t: Table, hiddenP: number): string {
  const hidden = t.cols.filter((c) => c.hidden);
  const visible = t.cols.filter((c) => !c.hidden);
  const pool = hidden.length > 0 && p.chance(hiddenP) ? hidden : visible;
  return p.one(pool).name;
}

/**
 * A FROM clause whose column `s.x` carries whole rows of `t` through a merge of rows (UNION ALL,
 * multi-row VALUES, LATERAL, a row carried in a row), and the path that reads the carried row's
 * fields (`(s.x)`, or `((s.x).y)` for a row inside a row).
 */
function carrier(p: Pick, t: Table): { from: string; row: string } {
  const n = t.name;
  return p.one([
    () => ({ from: `(SELECT a AS x FROM ${n} a UNION ALL SELECT NULL::${n}) s`, row: 's.x' }),
    () => ({ from: `(SELECT NULL::${n} AS x UNION ALL SELECT a FROM ${n} a WHERE a.id < 3) s`, row: 's.x' }),
    () => ({
      from: `(VALUES (NULL::${n}), ((SELECT a FROM ${n} a ORDER BY a.id LIMIT 1))) s(x)`,
      row: 's.x',
    }),
    () => ({ from: `${n} a, LATERAL (VALUES (a), (NULL::${n})) s(x)`, row: 's.x' }),
    () => ({ from: `${n} a, LATERAL (SELECT a AS x UNION ALL SELECT a) s`, row: 's.x' }),
    () => ({ from: `(SELECT t1 AS x FROM (SELECT a AS y FROM ${n} a) t1) s`, row: '(s.x).y' }),
    () => ({ from: `(SELECT a AS x FROM ${n} a UNION ALL SELECT b FROM ${n} b) s`, row: 's.x' }),
  ])();
}

/** A way to read the carried row `row` of `t`: a field, the row whole, as JSON or text, in an array, in ROW(). */
function reader(p: Pick, t: Table, row: string): string {
  const c = col(p, t, 50);
  return p.one([
    `(${row}).${c}`,
    `(${row}).${c}`,
    `${row}`,
    `to_json(${row})`,
    `${row}::text`,
    `row_to_json(${row})->>'${c}'`,
    `(ARRAY[${row}])[1]`,
    `ROW(${row})`,
    `length((${row}).${c}::text)`,
    `(${row}).*`,
  ]);
}

/** A statement that carries whole rows of a table through a merge of rows and reads them back. */
export function carrierStatement(p: Pick, tables: readonly Table[]): string {
  const t = p.one(tables);
  const { from, row } = carrier(p, t);
  const read = reader(p, t, row);
  const c = col(p, t, 50);
  return p.one([
    () => `SELECT ${read} FROM ${from} ORDER BY 1`,
    () =>
      `SELECT count(*) FROM ${from} WHERE (${row}).${c}::text ${p.one(["LIKE '9%'", 'IS NULL', "= '1'", "< 'b'"])}`,
    () => `SELECT count(*) FROM ${from} GROUP BY ${p.one([row, `(${row}).${c}`])} ORDER BY 1`,
    () =>
      `INSERT INTO orders (id, user_id, amount, note) SELECT 600 + row_number() OVER (), 1, 1, (${read})::text FROM ${from} RETURNING note`,
    () =>
      `WITH RECURSIVE r(n, x) AS (SELECT 1, NULL::${t.name} UNION ALL SELECT r.n + 1, a FROM r, ${t.name} a WHERE a.id = r.n AND r.n < 4) SELECT ${reader(p, t, 'r.x')} FROM r ORDER BY n`,
    () =>
      `WITH RECURSIVE r(n, x) AS (SELECT 1, NULL::${t.name} UNION ALL SELECT n + 1, CASE WHEN n = 1 THEN (SELECT a FROM ${t.name} a ORDER BY a.id LIMIT 1) ELSE x END FROM r WHERE n < 3) SELECT ${reader(p, t, 'r.x')} FROM r ORDER BY n`,
    () =>
      `WITH RECURSIVE r(n, x) AS (SELECT 1, a FROM ${t.name} a WHERE a.id = 1 UNION ALL SELECT n + 1, x FROM r WHERE n < 3) SELECT ${reader(p, t, 'r.x')} FROM r ORDER BY n`,
    () => `SELECT array_agg(a ORDER BY a.id)::text FROM ${t.name} a`,
    () => `SELECT ROW(a.id, a.${c})::text FROM ${t.name} a ORDER BY a.id`,
  ])();
}

/** Two distinct tables of `tables`. */
function two(p: Pick, tables: readonly Table[]): [Table, Table] {
  const a = p.one(tables);
  const rest = tables.filter((t) => t !== a);
  return [a, p.one(rest)];
}

/**
 * A statement whose names Postgres binds by its scoping rules: an output alias that shadows an
 * outer column in GROUP BY / ORDER BY / HAVING / DISTINCT ON, a CTE named like a table, a WITH
 * RECURSIVE item referring to a later one named like a table, a recursive CTE with its own WITH,
 * and JOIN ON next to an earlier FROM item.
 */
export function scopeStatement(p: Pick, tables: readonly Table[]): string {
  const [outer, inner] = two(p, tables);
  const alias = p.one(outer.cols).name;
  const hid = col(p, inner, 70);
  const vis = col(p, inner, 0);
  return p.one([
    () =>
      `SELECT o.id, (SELECT i.${hid} AS ${alias} FROM ${inner.name} i GROUP BY ${alias} ORDER BY 1 LIMIT 1) FROM ${outer.name} o ORDER BY 1`,
    () =>
      `SELECT o.id, (SELECT count(*) FROM (SELECT ${hid} AS s FROM ${inner.name}) i GROUP BY ${alias} LIMIT 1) FROM ${outer.name} o ORDER BY 1`,
    () =>
      `SELECT o.id, (SELECT i.${hid} AS ${alias} FROM ${inner.name} i ORDER BY ${alias} LIMIT 1) FROM ${outer.name} o ORDER BY 1`,
    () =>
      `SELECT o.id, (SELECT count(*) FROM ${inner.name} i GROUP BY i.${vis} HAVING count(${alias}) > 1 LIMIT 1) FROM ${outer.name} o ORDER BY 1`,
    () =>
      `SELECT DISTINCT ON (${alias}) i.${hid} AS ${alias}, i.id FROM ${inner.name} i ORDER BY ${alias}, 2`,
    () => `SELECT i.${hid} AS ${vis}, count(*) FROM ${inner.name} i GROUP BY ${vis} ORDER BY 2`,
    () =>
      `WITH ${inner.name} AS (SELECT id, ${hid} AS ${vis} FROM public.${inner.name}) SELECT ${vis} FROM ${inner.name} ORDER BY 1`,
    () =>
      `WITH RECURSIVE a AS (SELECT ${vis} FROM ${inner.name}), ${inner.name} AS (SELECT ${hid} AS ${vis} FROM public.${inner.name}) SELECT ${vis} FROM a ORDER BY 1`,
    () =>
      `WITH RECURSIVE ${outer.name}(a, b) AS (WITH w AS (SELECT 1) SELECT 'x'::text, ${hid}::text FROM ${inner.name} UNION ALL SELECT b, b FROM ${outer.name} WHERE false) SELECT a FROM ${outer.name} ORDER BY 1`,
    () =>
      `WITH RECURSIVE t(n, v) AS (WITH ${inner.name} AS (SELECT 1 AS id, 'w'::text AS v) SELECT 1, v FROM ${inner.name} UNION ALL SELECT n + 1, (SELECT ${hid}::text FROM public.${inner.name} LIMIT 1) FROM t WHERE n < 2) SELECT v FROM t ORDER BY 1`,
    () =>
      `SELECT o.id, (SELECT count(*) FROM (SELECT 'x' AS ${hid}) a, orders b JOIN orders c ON ${hid}::text LIKE 'a%') FROM ${inner.name} o ORDER BY 1`,
  ])();
}

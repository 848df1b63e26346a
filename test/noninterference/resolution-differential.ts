// The resolution differential: the base and view columns pgwarden binds a SELECT's names to, against those Postgres's parser bound (pg_depend of a temporary view of it).
import { parseSync } from 'libpg-query';
import type pg from 'pg';
import type { Catalog } from '../../src/catalog/types.js';
import { analyzeQuery } from '../../src/sql/query/analyze-query.js';

/** How one SELECT compared. */
export type Comparison =
  | { readonly kind: 'same'; readonly text: string }
  | {
      readonly kind: 'differs';
      readonly text: string;
      readonly pgwardenOnly: string[];
      readonly postgresOnly: string[];
    }
  | { readonly kind: 'refused'; readonly text: string; readonly sqlstate: string }
  | {
      readonly kind: 'postgres-error';
      readonly text: string;
      readonly sqlstate: string;
      readonly message: string;
    };

const VIEW = 'pgwarden_resolution_probe';

/**
 * The columns and relations the temporary view's rule depends on: `schema.table.column` for
 * refobjsubid > 0 (the Vars the parser made, and the fields FieldSelects take), `schema.table`
 * for the relations (refobjsubid 0, or a system column's negative attnum).
 */
const DEPENDS = `
SELECT n.nspname AS schema, c.relname AS rel, a.attname AS col, c.relkind AS kind
FROM pg_depend d
JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
JOIN pg_class c ON c.oid = d.refobjid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid AND d.refobjsubid > 0
WHERE r.ev_class = '${VIEW}'::regclass AND d.refclassid = 'pg_class'::regclass
  AND d.refobjid <> r.ev_class`;

/** What Postgres's parser bound in `text`: columns and relations, or its error. */
async function postgresBinding(
  client: pg.ClientBase,
  text: string,
): Promise<{ columns: Set<string>; relations: Set<string> } | { sqlstate: string; message: string }> {
  await client.query('BEGIN');
  try {
    await client.query(`CREATE TEMP VIEW ${VIEW} AS SELECT 1 FROM (${text}\n) AS pgwarden_probe`);
    const r = await client.query<{ schema: string; rel: string; col: string | null; kind: string }>(DEPENDS);
    const columns = new Set<string>();
    const relations = new Set<string>();
    for (const row of r.rows) {
      // A field of a standalone composite type (`(s.dest).city`): pgwarden's catalog has no such
      // relation; the value is the column's own (s.dest), governed by its SEE.
      if (row.kind === 'c') continue;
      if (row.col === null) relations.add(`${row.schema}.${row.rel}`);
      else columns.add(`${row.schema}.${row.rel}.${row.col}`);
    }
    return { columns, relations };
  } catch (e) {
    const err = e as { code?: string; message?: string };
    return { sqlstate: err.code ?? '?', message: err.message ?? String(e) };
  } finally {
    await client.query('ROLLBACK');
  }
}

/** What pgwarden binds in `text` (analyzed alone, search_path public), or its refusal. */
function pgwardenBinding(
  catalog: Catalog,
  text: string,
): { columns: Set<string>; relations: Set<string>; wholeRows: Set<string> } | { sqlstate: string } {
  const tree = parseSync(text) as { stmts: { stmt: { SelectStmt: unknown } }[] };
  const r = analyzeQuery('SelectStmt', tree.stmts[0]?.stmt.SelectStmt, { catalog, searchPath: ['public'] });
  if (r.refusal) return { sqlstate: r.refusal.sqlstate };
  const relations = new Set<string>();
  const wholeRows = new Set(r.uses.flatMap((u) => (u.use === 'whole-row' ? [`${u.schema}.${u.table}`] : [])));
  for (const q of r.requirements)
    if (q.action === 'SELECT' && q.object.level === 'table')
      relations.add(`${q.object.schema}.${q.object.table}`);
  return {
    columns: new Set(r.boundColumns.map((c) => `${c.schema}.${c.table}.${c.column}`)),
    relations,
    wholeRows,
  };
}

/**
 * Compares one SELECT: the column sets must be equal, and every relation pgwarden binds must be
 * one Postgres bound (Postgres also depends on relations named by regclass literals and the like).
 * pg_catalog is left out: its objects are pinned, Postgres records no dependency on them. A
 * column Postgres records where pgwarden reads the whole row of its relation is covered.
 */
export async function compareResolution(
  client: pg.ClientBase,
  catalog: Catalog,
  text: string,
): Promise<Comparison> {
  const ours = pgwardenBinding(catalog, text);
  if ('sqlstate' in ours) return { kind: 'refused', text, sqlstate: ours.sqlstate };
  const theirs = await postgresBinding(client, text);
  if ('sqlstate' in theirs) return { kind: 'postgres-error', text, ...theirs };
  // pg_catalog objects are pinned: Postgres records no dependency on them.
  const mine = [...ours.columns].filter((c) => !c.startsWith('pg_catalog.'));
  const pgwardenOnly = mine.filter((c) => !theirs.columns.has(c));
  // A field of a row an expression computes (`(CASE … THEN r END).ssn`, a scalar subquery's row):
  // Postgres records the row type's column; pgwarden reads the whole row there (a whole-row use,
  // every column): covered.
  const postgresOnly = [...theirs.columns].filter(
    (c) => !ours.columns.has(c) && !ours.wholeRows.has(c.slice(0, c.lastIndexOf('.'))),
  );
  // A relation's own entry is dropped where a column of it is recorded (eliminate_duplicate_dependencies).
  const theirRelations = new Set(theirs.relations);
  for (const c of theirs.columns) theirRelations.add(c.slice(0, c.lastIndexOf('.')));
  for (const rel of ours.relations)
    if (!rel.startsWith('pg_catalog.') && !theirRelations.has(rel)) pgwardenOnly.push(rel);
  if (pgwardenOnly.length === 0 && postgresOnly.length === 0) return { kind: 'same', text };
  return { kind: 'differs', text, pgwardenOnly: pgwardenOnly.sort(), postgresOnly: postgresOnly.sort() };
}

/** Runs `compare` over `texts` on `clients` side by side (one statement per client at a time). */
export async function compareAll(
  clients: readonly pg.ClientBase[],
  catalog: Catalog,
  texts: readonly string[],
): Promise<Comparison[]> {
  const out: Comparison[] = new Array(texts.length);
  let next = 0;
  await Promise.all(
    clients.map(async (c) => {
      for (let i = next++; i < texts.length; i = next++)
        out[i] = await compareResolution(c, catalog, texts[i] as string);
    }),
  );
  return out;
}

// The catalog parse-coverage statements run against: the demo catalog plus the tables and columns those statements name.
import { loadModule, parseSync } from 'libpg-query';
import type { Catalog, CatalogColumn, CatalogRelation } from '../../../src/catalog/types.js';
import { walkNodes } from '../../../src/sql/node-values.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

/** One case of /work/shared/corpus/parse-coverage.json. */
export interface CoverageCase {
  readonly id: number;
  readonly category: string;
  readonly sql: string;
  readonly valid_pg15: boolean;
  readonly statements_pg15: readonly string[] | null;
}

const CATALOG_SCHEMAS = new Set(['pg_catalog', 'information_schema']);

/**
 * A column type chosen from the name, so functions and operators resolve as the statement's author
 * meant: `id` and `*_id` integer, amounts numeric, `*_at` timestamptz, flags boolean, `tags`/`arr`
 * text[], `data` jsonb, everything else text.
 */
function typeFor(name: string): { typeOid: number; typeName: string } {
  if (
    name === 'id' ||
    name.endsWith('_id') ||
    ['n', 'depth', 'colidx', 'key_seq', 'x', 'y', 'z', 'a', 'b', 'c'].includes(name)
  ) {
    return { typeOid: 23, typeName: 'integer' };
  }
  if (['total', 'amount', 'balance', 'score', 'sales', 'transaction_value', 'v'].includes(name)) {
    return { typeOid: 1700, typeName: 'numeric' };
  }
  if (name.endsWith('_at') || name === 'expires' || name === 'deleted')
    return { typeOid: 1184, typeName: 'timestamp with time zone' };
  if (['active', 'banned', 'valid'].includes(name)) return { typeOid: 16, typeName: 'boolean' };
  if (name === 'tags' || name === 'arr') return { typeOid: 1009, typeName: 'text[]' };
  if (name === 'data') return { typeOid: 3802, typeName: 'jsonb' };
  return { typeOid: 25, typeName: 'text' };
}

/**
 * The demo catalog extended for the parse-coverage corpus, whose table names are arbitrary
 * (its description says: give the analysis a catalog that has them). Derivation, per statement
 * the PG15 grammar accepts: every RangeVar outside pg_catalog / information_schema is a table
 * (in its schema, `public` by default); a qualified column reference `q.col` adds `col` to the
 * table `q` names (an alias or the table itself); an unqualified one is added when the statement
 * names exactly one such table. Demo tables keep their columns (and OIDs) and get the extra ones
 * after them. Types come from {@link typeFor}. The result depends only on the corpus.
 */
export async function parseCoverageCatalog(cases: readonly CoverageCase[]): Promise<Catalog> {
  await loadModule();
  const demo = loadDemoCatalog();
  const wanted = new Map<string, Set<string>>(); // schema.table → columns
  for (const c of cases) {
    if (!c.valid_pg15) continue;
    const tree = parseSync(c.sql);
    for (const raw of (tree.stmts ?? []) as { stmt: unknown }[]) {
      const aliases = new Map<string, string>();
      const tables = new Set<string>();
      const refs: string[][] = [];
      const ctes = new Set<string>();
      walkNodes(raw.stmt, (type, f) => {
        if (type === 'CommonTableExpr') ctes.add(String(f.ctename));
        return true;
      });
      const addTable = (rv: Record<string, unknown>): string | undefined => {
        const schema = typeof rv.schemaname === 'string' ? rv.schemaname : 'public';
        if (CATALOG_SCHEMAS.has(schema) || typeof rv.catalogname === 'string') return undefined;
        if (rv.schemaname === undefined && ctes.has(String(rv.relname))) return undefined;
        const key = `${schema}.${String(rv.relname)}`;
        tables.add(key);
        if (!wanted.has(key)) wanted.set(key, new Set());
        const alias = (rv.alias as { aliasname?: string } | undefined)?.aliasname;
        aliases.set(alias ?? String(rv.relname), key);
        return key;
      };
      walkNodes(raw.stmt, (type, f) => {
        if (type === 'RangeVar') addTable(f);
        // DML targets are RangeVar fields, not wrapped nodes; their written columns belong to them.
        if (['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt'].includes(type) && f.relation) {
          const key = addTable(f.relation as Record<string, unknown>);
          const written = type === 'InsertStmt' ? f.cols : type === 'UpdateStmt' ? f.targetList : undefined;
          for (const t of (written as { ResTarget?: { name?: string } }[] | undefined) ?? []) {
            if (key && t.ResTarget?.name) wanted.get(key)?.add(t.ResTarget.name);
          }
        }
        if (type === 'ColumnRef') {
          const names = (f.fields as { String?: { sval?: string } }[]).map((x) => x.String?.sval ?? '*');
          refs.push(names);
        }
        return true;
      });
      for (const names of refs) {
        const col = names[names.length - 1];
        if (col === undefined || col === '*') continue;
        if (names.length >= 2) {
          const t = aliases.get(names[names.length - 2] as string);
          if (t) wanted.get(t)?.add(col);
        } else if (tables.size === 1) {
          wanted.get([...tables][0] as string)?.add(col);
        }
      }
    }
  }
  const relations = new Map<string, CatalogRelation>(demo.relations);
  const namespaces = new Set(demo.namespaces);
  let oid = 900_000;
  for (const [key, cols] of [...wanted.entries()].sort()) {
    const dot = key.indexOf('.');
    const schema = key.slice(0, dot);
    const name = key.slice(dot + 1);
    namespaces.add(schema);
    const existing = relations.get(key);
    const columns: CatalogColumn[] = [...(existing?.columns ?? [])];
    for (const col of [...cols].sort()) {
      if (columns.some((x) => x.name === col)) continue;
      columns.push({
        name: col,
        attnum: columns.length + 1,
        ...typeFor(col),
        notNull: false,
        generated: null,
        generatedFrom: [],
        unique: col === 'id',
      });
    }
    relations.set(key, {
      oid: existing?.oid ?? oid++,
      schema,
      name,
      kind: existing?.kind ?? 'table',
      columns,
      viewDefinition: existing?.viewDefinition ?? null,
    });
  }
  return { ...demo, version: demo.version + 1000, namespaces, relations };
}

// The corpus/analysis case format and the canonical text forms of uses, requirements and origins.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSync } from 'libpg-query';
import YAML from 'yaml';
import type { Catalog } from '../../../../src/catalog/types.js';
import type { ColumnOrigin, ColumnUse, Requirement } from '../../../../src/sql/analysis-types.js';
import {
  analyzeQuery,
  type QueryNodeType,
  type QueryResult,
} from '../../../../src/sql/query/analyze-query.js';
import { SYSTEM_COLUMNS } from '../../../../src/sql/query/system-columns.js';

/** One corpus case: SQL plus its expected lineage, uses and requirements, or its refusal. */
export interface CorpusCase {
  id: string;
  sql: string;
  search_path?: string[];
  kind?: string;
  result_columns?: { name: string; sources: string[] | null; origin: string }[];
  uses?: string[];
  requirements?: string[];
  functions?: string[];
  catalog_relations?: string[];
  refusal?: { sqlstate: string; message_contains: string };
  /** Why Postgres itself answers differently (e.g. it reads `u.to_json` as a call); skips the live check. */
  postgres_differs?: string;
}

/** The folder holding the corpus YAML files. */
export const CORPUS_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../../corpus/analysis',
);

/** Every case of every corpus file, with the file it came from. */
export function loadCorpus(): { file: string; c: CorpusCase }[] {
  const out: { file: string; c: CorpusCase }[] = [];
  for (const f of fs
    .readdirSync(CORPUS_DIR)
    .filter((n) => n.endsWith('.yaml'))
    .sort()) {
    const cases = YAML.parse(fs.readFileSync(path.join(CORPUS_DIR, f), 'utf8')) as CorpusCase[];
    for (const c of cases) out.push({ file: f, c });
  }
  return out;
}

/** `output 0 public.users.email`, `test WHERE …`, `compute …`, `whole-row public.users`, `write-target …`. */
export function formatUse(u: ColumnUse): string {
  if (u.use === 'whole-row') return `whole-row ${u.schema}.${u.table}`;
  const col = `${u.schema}.${u.table}.${u.column}`;
  if (u.use === 'output') return `output ${u.outputIndex} ${col}`;
  if (u.use === 'test') return `test ${u.clause} ${col}`;
  return `${u.use} ${col}`;
}

/** `SELECT table public.users`, `SELECT column public.users.email`, `MANAGE database`. */
export function formatRequirement(r: Requirement): string {
  const o = r.object;
  if (o.level === 'database') return `${r.action} database`;
  if (o.level === 'table') return `${r.action} table ${o.schema}.${o.table}`;
  return `${r.action} column ${o.schema}.${o.table}.${o.column}`;
}

/**
 * `public.users.email` (attnum's column), `public.users.*` (attnum 0: whole row),
 * `public.users.ctid` (a negative attnum: a system column), or `none` (0/0).
 */
export function formatOrigin(catalog: Catalog, o: ColumnOrigin): string {
  if (o.tableOid === 0) return 'none';
  for (const r of catalog.relations.values()) {
    if (r.oid !== o.tableOid) continue;
    if (o.attnum === 0) return `${r.schema}.${r.name}.*`;
    if (o.attnum < 0) {
      const sys = [...SYSTEM_COLUMNS].find(([, n]) => n === o.attnum)?.[0];
      return `${r.schema}.${r.name}.${sys ?? `#${o.attnum}`}`;
    }
    const c = r.columns.find((x) => x.attnum === o.attnum);
    return `${r.schema}.${r.name}.${c?.name ?? `#${o.attnum}`}`;
  }
  return `oid ${o.tableOid}/${o.attnum}`;
}

/** Parses `sql` (one statement) and analyzes it. Throws when it does not parse or is not a row statement. */
export function analyzeCase(catalog: Catalog, c: CorpusCase): QueryResult {
  const tree = parseSync(c.sql) as { stmts: { stmt: Record<string, unknown> }[] };
  const stmt = tree.stmts[0]?.stmt ?? {};
  const kind = Object.keys(stmt)[0] as QueryNodeType;
  return analyzeQuery(kind, stmt[kind], { catalog, searchPath: c.search_path ?? ['public'] });
}

/** The case as the analysis answers it (same shape as the expectation). */
export function actualCase(catalog: Catalog, c: CorpusCase): CorpusCase {
  const r = analyzeCase(catalog, c);
  const out: CorpusCase = { id: c.id, sql: c.sql };
  if (c.search_path) out.search_path = c.search_path;
  if (c.postgres_differs) out.postgres_differs = c.postgres_differs;
  if (r.refusal) {
    out.refusal = { sqlstate: r.refusal.sqlstate, message_contains: r.refusal.message };
    return out;
  }
  out.kind = r.kind;
  out.result_columns = r.resultColumns.map((rc) => ({
    name: rc.name,
    sources: rc.sources ? rc.sources.map((s) => `${s.schema}.${s.table}.${s.column}`) : null,
    origin: formatOrigin(catalog, rc.origin),
  }));
  out.uses = r.uses.map(formatUse).sort();
  out.requirements = r.requirements.map(formatRequirement).sort();
  if (r.functions.length > 0)
    out.functions = [...new Set(r.functions.map((f) => `${f.schema}.${f.name}`))].sort();
  if (r.catalogRelations.length > 0) out.catalog_relations = [...r.catalogRelations].sort();
  return out;
}

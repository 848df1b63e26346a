// Parses one row statement and analyzes it over the demo catalog fixture: the helper unit tests of analyzeQuery share.
import { parseSync } from 'libpg-query';
import {
  analyzeQuery,
  type QueryNodeType,
  type QueryResult,
} from '../../../../src/sql/query/analyze-query.js';
import { loadDemoCatalog } from '../../../fixtures/demo-catalog.js';

/** The node type and body of the first statement of `sql` (libpg-query must be loaded). */
export function parseQuery(sql: string): [QueryNodeType, unknown] {
  const tree = parseSync(sql) as { stmts: { stmt: Record<string, unknown> }[] };
  const stmt = tree.stmts[0]?.stmt ?? {};
  const kind = Object.keys(stmt)[0] as QueryNodeType;
  return [kind, stmt[kind]];
}

/** analyzeQuery of the first statement of `sql` over the demo catalog, under `searchPath`. */
export function analyzeDemo(sql: string, searchPath: string[] = ['public']): QueryResult {
  const [k, node] = parseQuery(sql);
  return analyzeQuery(k, node, { catalog: loadDemoCatalog(), searchPath });
}

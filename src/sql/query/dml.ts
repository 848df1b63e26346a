// Dispatch of row-writing statements (top level or in WITH) to their analyzers.
import { unsupported } from './errors.js';
import { analyzeInsert } from './insert.js';
import { analyzeMerge } from './merge.js';
import { type NodeName, type Obj, obj } from './node-kinds.js';
import { newScope, type Scope } from './scope.js';
import type { QueryState } from './state.js';
import type { OutColumn } from './target-list.js';
import { analyzeDelete, analyzeUpdate } from './update-delete.js';
import { analyzeWith } from './with-clause.js';

type DmlAnalyzer = (state: QueryState, body: Obj, scope: Scope) => OutColumn[];

const DML: Partial<Record<NodeName, DmlAnalyzer>> = {
  InsertStmt: analyzeInsert,
  UpdateStmt: analyzeUpdate,
  DeleteStmt: analyzeDelete,
  MergeStmt: analyzeMerge,
};

/**
 * Analyzes an INSERT / UPDATE / DELETE / MERGE body as a query level under `parent` (its own
 * WITH first) and returns its RETURNING columns. Throws 0A000 for any other kind.
 */
export function analyzeDml(
  state: QueryState,
  kind: NodeName,
  body: Obj,
  parent: Scope | null,
): { columns: OutColumn[] } {
  const f = DML[kind];
  if (!f) return unsupported(`a ${kind} here`);
  const scope = newScope(parent);
  const withClause = obj(body.withClause);
  if (withClause) analyzeWith(state, withClause, scope);
  return { columns: f(state, body, scope) };
}

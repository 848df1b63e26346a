// The contract of the row-statement analysis (src/sql/query/analyze-query.ts) that analyze() calls.

import type { Catalog } from '../catalog/types.js';
import type {
  AnalysisRefusal,
  ColumnRef,
  ColumnUse,
  FunctionCall,
  PlanRead,
  Requirement,
  ResultColumn,
  StatementBindings,
} from './analysis-types.js';

/** The five row statements the query analysis handles. */
export type RowNodeType = 'SelectStmt' | 'InsertStmt' | 'UpdateStmt' | 'DeleteStmt' | 'MergeStmt';

/** What the query analysis resolves names against. */
export interface QueryAnalyzerContext {
  readonly catalog: Catalog;
  readonly searchPath: readonly string[];
}

/**
 * The query analysis's answer for one row statement. Locations in it are UTF-8 byte offsets as
 * libpg-query reports them; analyze() converts them to characters.
 */
export interface QueryAnalyzerResult {
  readonly kind: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'MERGE';
  readonly requirements: readonly Requirement[];
  readonly resultColumns: readonly ResultColumn[];
  readonly uses: readonly ColumnUse[];
  readonly functions: readonly FunctionCall[];
  readonly catalogRelations: readonly string[];
  /** Every base column a plan node could read (EXPLAIN); absent: none. */
  readonly planReads?: readonly PlanRead[];
  /** The table and view columns references bind to, as Postgres's parser binds them; absent: none. */
  readonly boundColumns?: readonly ColumnRef[];
  /** The RangeVars and CTE definitions of the statement's text, as bound (byte offsets). */
  readonly bindings?: StatementBindings;
  readonly refusal?: AnalysisRefusal;
}

/**
 * Analyzes one row statement. Input: the node type and the node's own fields (the value under
 * `SelectStmt` etc.), the catalog and search path. Output: the result; refusals are in `refusal`.
 */
export type QueryAnalyzer = (
  nodeType: RowNodeType,
  node: unknown,
  ctx: QueryAnalyzerContext,
) => QueryAnalyzerResult;

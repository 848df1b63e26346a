// What a statement handler sees (catalog, tracked search_path, the parsed text) and the StatementAnalysis builders it uses.

import type { Catalog } from '../catalog/types.js';
import type {
  AnalysisRefusal,
  Requirement,
  SessionEffect,
  StatementAnalysis,
  StatementKind,
} from './analysis-types.js';
import type { ParsedSql } from './parser.js';
import type { QueryAnalyzer } from './query-analyzer.js';

/** The state and services a statement handler works with. */
export interface StatementContext {
  readonly catalog: Catalog;
  /** The search_path the statement runs under; null when it cannot be known (see statement-analyzer.ts). */
  readonly searchPath: readonly string[] | null;
  /** The value RESET / DISCARD ALL / `SET … TO DEFAULT` restore. */
  readonly resetSearchPath: readonly string[];
  readonly parsed: ParsedSql;
  readonly analyzeQuery: QueryAnalyzer;
  /** Node type, character offset and length of the top-level statement being analyzed. */
  readonly nodeType: string;
  readonly location: number;
  readonly length: number;
  /**
   * Analyzes a statement nested in this one (EXPLAIN's, PREPARE's, DECLARE's, COPY's query), given
   * as its node wrapper (`{ SelectStmt: {…} }`), under the same state.
   */
  analyzeNested(wrapper: unknown): StatementAnalysis;
}

/** An analysis with nothing in it, for the current statement: the base every builder extends. */
export function emptyAnalysis(ctx: StatementContext, kind: StatementKind): StatementAnalysis {
  return {
    nodeType: ctx.nodeType,
    kind,
    location: ctx.location,
    length: ctx.length,
    requirements: [],
    resultColumns: [],
    uses: [],
    functions: [],
    catalogRelations: [],
    sessionEffects: [],
  };
}

/** A session-control statement: no permission needed, with the session effects it has. */
export function sessionStatement(
  ctx: StatementContext,
  effects: readonly SessionEffect[] = [],
): StatementAnalysis {
  return { ...emptyAnalysis(ctx, 'SESSION'), sessionEffects: effects };
}

/** The MANAGE requirement on the database, with its reason (`DROP TABLE`), at the statement. */
export function manageRequirement(
  ctx: StatementContext,
  reason: string,
  location = ctx.location,
): Requirement {
  return { action: 'MANAGE', object: { level: 'database' }, reason, location };
}

/** A statement that needs MANAGE and nothing else (DESIGN.md "Requirements"). */
export function manageStatement(ctx: StatementContext, reason: string): StatementAnalysis {
  return { ...emptyAnalysis(ctx, 'MANAGE'), requirements: [manageRequirement(ctx, reason)] };
}

/** A statement the analysis refuses; `kind` is what it would have been (MANAGE when unknown). */
export function refusedStatement(
  ctx: StatementContext,
  refusal: AnalysisRefusal,
  kind: StatementKind = 'MANAGE',
): StatementAnalysis {
  return { ...emptyAnalysis(ctx, kind), refusal };
}

/** Builds a refusal located at the current statement unless a location is given. */
export function refusalAt(
  ctx: StatementContext,
  sqlstate: string,
  message: string,
  location: number = ctx.location,
): AnalysisRefusal {
  return { sqlstate, message, location };
}

/** Returns the single node type and its fields of a node wrapper `{ Type: {…} }`. */
export function unwrapNode(wrapper: unknown): { readonly type: string; readonly node: unknown } | null {
  if (wrapper === null || typeof wrapper !== 'object') return null;
  const keys = Object.keys(wrapper);
  const type = keys[0];
  if (keys.length !== 1 || type === undefined) return null;
  return { type, node: (wrapper as Record<string, unknown>)[type] };
}

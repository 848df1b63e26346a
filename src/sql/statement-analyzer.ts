// Analyzes the statements of one parsed SQL string in order, each under the session state the previous ones leave.

import type { Catalog } from '../catalog/types.js';
import type {
  Analysis,
  CteDefinition,
  RelationBinding,
  SessionEffect,
  StatementAnalysis,
  StatementBindings,
} from './analysis-types.js';
import type { ParsedSql } from './parser.js';
import type { QueryAnalyzer } from './query-analyzer.js';
import { refusalAt, refusedStatement, type StatementContext, unwrapNode } from './statement-context.js';
import { statementHandler } from './statement-dispatch.js';
import { withUserCodeTypes } from './user-code-types.js';

/**
 * The session state a SQL string starts from. Only `catalog` and `searchPath` are required; the
 * others describe the transaction the string may end or roll back (the proxy tracks them).
 */
export interface SessionPaths {
  /** The search_path in force now (SET LOCAL included). */
  readonly searchPath: readonly string[];
  /**
   * The session-level search_path (without SET LOCAL), which COMMIT leaves in force. Defaults to
   * `searchPath`: pass it when a SET LOCAL from an earlier query string is in force.
   */
  readonly sessionSearchPath?: readonly string[];
  /**
   * The search_path ROLLBACK restores: the session-level path at the start of the open
   * transaction, or — when the session is idle — the path at the start of this string (its
   * statements form one implicit transaction). When absent, a row statement that follows a ROLLBACK
   * in the same string is refused (0A000): the path it would run under is not known here.
   */
  readonly transactionStartSearchPath?: readonly string[];
  /** The value RESET / DISCARD ALL restore. Defaults to the catalog's `defaultSearchPath`. */
  readonly resetSearchPath?: readonly string[];
}

/** The search_path bookkeeping while walking one string (null: not known here). */
interface PathState {
  current: readonly string[] | null;
  session: readonly string[] | null;
  /** The paths ROLLBACK restores (the transaction's start); undefined: not known here. */
  txStart: { current: readonly string[] | null; session: readonly string[] | null } | undefined;
  savepoints: { name: string; current: readonly string[] | null; session: readonly string[] | null }[];
}

/**
 * Applies one statement's effects to the path state, mirroring Postgres's GUC stack: SET changes
 * the session value; SET LOCAL only the transaction's; COMMIT drops LOCAL values; ROLLBACK restores
 * the value at BEGIN; ROLLBACK TO restores the value at the savepoint; RESET and DISCARD ALL
 * restore the reset value. A ROLLBACK (TO) whose starting point lies in an earlier string makes the
 * path unknown unless the caller passed it. In one Query message the statements before an explicit
 * BEGIN share its transaction (the implicit block becomes explicit), so BEGIN does not move the
 * point ROLLBACK returns to; COMMIT and ROLLBACK start a new one.
 */
function applyEffects(state: PathState, effects: readonly SessionEffect[], reset: readonly string[]): void {
  for (const e of effects) {
    switch (e.kind) {
      case 'set-search-path':
        state.current = e.path;
        if (!e.local) state.session = e.path;
        break;
      case 'reset-search-path':
      case 'discard-all':
        state.current = reset;
        state.session = reset;
        break;
      case 'begin':
        // BEGIN turns the string's implicit transaction into an explicit one: a later ROLLBACK
        // undoes the statements before BEGIN too, so the transaction's start does not move.
        break;
      case 'commit':
        state.current = state.session;
        state.txStart = { current: state.session, session: state.session };
        state.savepoints = [];
        break;
      case 'rollback': {
        const start = state.txStart === undefined ? null : state.txStart.session;
        state.current = start;
        state.session = start;
        state.txStart = { current: start, session: start };
        state.savepoints = [];
        break;
      }
      case 'savepoint':
        state.savepoints.push({ name: e.name, current: state.current, session: state.session });
        break;
      case 'rollback-to':
      case 'release': {
        let i = state.savepoints.length - 1;
        while (i >= 0 && state.savepoints[i]?.name !== e.name) i--;
        const sp = state.savepoints[i];
        if (e.kind === 'release') {
          if (sp) state.savepoints.length = i;
          break;
        }
        if (sp) {
          state.current = sp.current;
          state.session = sp.session;
          state.savepoints.length = i + 1;
        } else {
          state.current = null;
          state.session = null;
        }
        break;
      }
      default:
        break;
    }
  }
}

/**
 * Analyzes every statement of `parsed` in order (DESIGN.md "Analysis": `SET search_path TO s;
 * SELECT …` resolves the SELECT under `s`; `SET LOCAL` too, within the string's transaction).
 * Input: the parsed string, the catalog, the starting paths, and the query analysis. Output: the
 * Analysis; its `refusal` repeats the first statement refusal. A node type outside the dispatch
 * table is refused 0A000. Never throws.
 */
export function analyzeParsed(
  parsed: ParsedSql,
  catalog: Catalog,
  opts: SessionPaths,
  analyzeQuery: QueryAnalyzer,
): Analysis {
  const reset = opts.resetSearchPath ?? catalog.defaultSearchPath;
  const state: PathState = {
    current: opts.searchPath,
    session: opts.sessionSearchPath ?? opts.searchPath,
    txStart: opts.transactionStartSearchPath
      ? { current: opts.transactionStartSearchPath, session: opts.transactionStartSearchPath }
      : undefined,
    savepoints: [],
  };
  const statements: StatementAnalysis[] = [];
  for (const st of parsed.statements) {
    // Bindings of the queries nested in this statement (EXPLAIN, PREPARE, DECLARE, CREATE TABLE
    // AS, COPY (query), …): their text is part of this statement's, which the rewrite qualifies.
    const nested: StatementBindings[] = [];
    const makeCtx = (nodeType: string): StatementContext => ({
      catalog,
      searchPath: expandUser(state.current, catalog.sessionUser),
      resetSearchPath: reset,
      parsed,
      analyzeQuery,
      nodeType,
      location: st.location,
      length: st.length,
      analyzeNested: (wrapper: unknown) => {
        const w = unwrapNode(wrapper);
        const ctx = makeCtx(w?.type ?? 'UnknownStmt');
        if (!w) return refusedStatement(ctx, refusalAt(ctx, '42601', 'missing statement'));
        const inner = dispatch(w.type, w.node, ctx);
        if (inner.bindings) nested.push(inner.bindings);
        return inner;
      },
    });
    const analysis = withUserCodeTypes(
      dispatch(st.nodeType, st.node, makeCtx(st.nodeType)),
      st.node,
      catalog,
      expandUser(state.current, catalog.sessionUser),
      parsed.offsets.toChar,
    );
    statements.push(withNestedBindings(analysis, nested));
    applyEffects(state, analysis.sessionEffects, reset);
  }
  const first = statements.find((s) => s.refusal !== undefined);
  return first?.refusal ? { statements, refusal: first.refusal } : { statements };
}

/** The statement with the bindings of its nested queries added to its own (each RangeVar once). */
function withNestedBindings(a: StatementAnalysis, nested: readonly StatementBindings[]): StatementAnalysis {
  if (nested.length === 0) return a;
  const relations = new Map<number, RelationBinding>();
  const ctes = new Map<number, CteDefinition>();
  for (const b of [...nested, ...(a.bindings ? [a.bindings] : [])]) {
    for (const r of b.relations) relations.set(r.location, r);
    for (const c of b.ctes) ctes.set(c.location, c);
  }
  return { ...a, bindings: { relations: [...relations.values()], ctes: [...ctes.values()] } };
}

/** Runs the handler of `nodeType`; a type without one, or a handler that throws, is refused 0A000. */
function dispatch(nodeType: string, node: unknown, ctx: StatementContext): StatementAnalysis {
  const handler = statementHandler(nodeType);
  if (!handler) {
    return refusedStatement(ctx, refusalAt(ctx, '0A000', `pgwarden has no rule for ${nodeType} statements`));
  }
  try {
    return handler((node ?? {}) as Record<string, unknown>, ctx);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', `pgwarden could not analyze this ${nodeType}: ${msg}`),
    );
  }
}

/**
 * `"$user"` in a search_path names the schema of the current user's name (Postgres's
 * recomputeNamespacePath); it is replaced by the catalog's login so names resolve as upstream.
 * Without a known login it stays, and matches no schema.
 */
function expandUser(path: readonly string[] | null, user: string | undefined): readonly string[] | null {
  if (!path || user === undefined || !path.includes('$user')) return path;
  return path.map((s) => (s === '$user' ? user : s));
}

// SELECT: one query level — WITH, FROM, WHERE, the result list, grouping, windows, DISTINCT, ORDER BY, LIMIT, locking.
import { unsupported } from './errors.js';
import { type Env, walkExpr, walkWindowDef } from './expression.js';
import { analyzeFromClause } from './from-clause.js';
import { consume } from './lineage.js';
import { list, loc, type Obj, obj, str, unwrap } from './node-kinds.js';
import { groupItem, sortItem } from './result-clauses.js';
import { newScope, type Scope } from './scope.js';
import { analyzeSetOperation, analyzeValues } from './set-operation.js';
import type { QueryState } from './state.js';
import { analyzeTargetList, type OutColumn } from './target-list.js';
import { analyzeWith } from './with-clause.js';

/**
 * Analyzes a wrapped subquery node (`{ SelectStmt: … }`) as a query level under `parent`
 * (correlated references resolve outwards into it) and returns its result columns, whose
 * lineage the caller consumes. Throws 0A000 for any other node kind.
 */
export function analyzeSubquery(state: QueryState, node: unknown, parent: Scope | null): OutColumn[] {
  const [k, b] = unwrap(node);
  if (k !== 'SelectStmt') unsupported(`a ${k} as a subquery`, loc(b));
  return analyzeSelect(state, b, parent);
}

/**
 * Analyzes a SelectStmt body (plain, VALUES or set operation) as one query level under `parent`.
 * Uses made by tests (WHERE, GROUP BY, …) are recorded at once; the result columns' own uses are
 * left to whoever consumes them (the statement's output, an outer query, a write).
 * Throws QueryRefusal (42703, 42P01, 42702, 42P10, 0A000, …).
 */
export function analyzeSelect(state: QueryState, body: Obj, parent: Scope | null): OutColumn[] {
  const scope = newScope(parent);
  const withClause = obj(body.withClause);
  if (withClause) analyzeWith(state, withClause, scope);
  const op = str(body.op);
  if (op && op !== 'SETOP_NONE') return analyzeSetOperation(state, body, scope);
  if (list(body.valuesLists).length > 0) return analyzeValues(state, body, scope);
  const env: Env = { state, scope };
  analyzeFromClause(state, scope, body.fromClause);
  walkExpr(env, body.whereClause, { kind: 'test', clause: 'WHERE' });
  const out = analyzeTargetList(env, body.targetList);
  for (const g of list(body.groupClause)) groupItem(env, out, g);
  walkExpr(env, body.havingClause, { kind: 'test', clause: 'HAVING' });
  for (const w of list(body.windowClause)) {
    const [k, wb] = unwrap(w);
    if (k !== 'WindowDef') unsupported(`a ${k} in WINDOW`, loc(wb));
    walkWindowDef(env, wb, { kind: 'test', clause: 'WINDOW' });
  }
  analyzeDistinct(env, out, body.distinctClause);
  analyzeSortAndLimit(env, out, body);
  analyzeLocking(env, body.lockingClause);
  return out;
}

/**
 * SELECT DISTINCT tests every result column (collapsing duplicates makes the row count the
 * number of distinct values, seed 004); DISTINCT ON tests its expressions (ORDER BY rules).
 */
function analyzeDistinct(env: Env, out: readonly OutColumn[], distinct: unknown): void {
  const items = list(distinct);
  if (items.length === 0) return;
  const first = obj(items[0]);
  if (items.length === 1 && first && Object.keys(first).length === 0) {
    for (const c of out) consume(env.state, c.lineage, { kind: 'test', clause: 'DISTINCT' }, c.location);
    return;
  }
  for (const d of items) sortItem(env, out, d, 'DISTINCT');
}

/** ORDER BY (output names first), LIMIT / OFFSET / FETCH: all tests. */
export function analyzeSortAndLimit(env: Env, out: readonly OutColumn[], body: Obj): void {
  for (const s of list(body.sortClause)) {
    const [k, sb] = unwrap(s);
    if (k !== 'SortBy') unsupported(`a ${k} in ORDER BY`, loc(sb));
    sortItem(env, out, sb.node, 'ORDER BY');
  }
  walkExpr(env, body.limitCount, { kind: 'test', clause: 'LIMIT' });
  walkExpr(env, body.limitOffset, { kind: 'test', clause: 'LIMIT' });
}

/**
 * FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE: Postgres requires UPDATE privilege on each
 * locked table — the ones named after OF, else every relation of this level's FROM.
 */
function analyzeLocking(env: Env, clauses: unknown): void {
  for (const c of list(clauses)) {
    const [k, lb] = unwrap(c);
    if (k !== 'LockingClause') unsupported(`a ${k} in a locking clause`);
    const named = list(lb.lockedRels).map((r) => {
      const [rk, rb] = unwrap(r);
      if (rk !== 'RangeVar') unsupported(`a ${rk} in FOR UPDATE OF`);
      return [str(rb.relname), loc(rb)] as const;
    });
    const items = env.scope.namespace.filter((ns) =>
      named.length === 0
        ? ns.item.relation !== null
        : ns.relVisible && named.some(([n]) => n === ns.item.refname),
    );
    for (const [n, l] of named) {
      const ns = items.find((i) => i.item.refname === n);
      if (!ns) unsupported(`FOR UPDATE OF ${n}, which is not a table of this FROM clause`, l);
      if (!ns.item.relation) unsupported(`FOR UPDATE OF ${n}, a subquery, CTE or function`, l);
    }
    for (const ns of items) {
      const rel = ns.item.relation;
      if (rel)
        env.state.requireTable(
          'UPDATE',
          rel.schema,
          rel.name,
          lockReason(str(lb.strength)),
          ns.item.location,
        );
    }
  }
}

function lockReason(strength: string): string {
  const words: Record<string, string> = {
    LCS_FORKEYSHARE: 'KEY SHARE',
    LCS_FORSHARE: 'SHARE',
    LCS_FORNOKEYUPDATE: 'NO KEY UPDATE',
    LCS_FORUPDATE: 'UPDATE',
  };
  return `SELECT … FOR ${words[strength] ?? strength}`;
}

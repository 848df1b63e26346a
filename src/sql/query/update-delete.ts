// UPDATE and DELETE: target, FROM / USING, SET, WHERE, RETURNING.

import { type Target, targetColumn, writeInto, writeTarget } from './dml-target.js';
import { unsupported } from './errors.js';
import { type Env, walkExpr } from './expression.js';
import { analyzeFromClause } from './from-clause.js';
import { list, loc, type Obj, obj, str, unwrap } from './node-kinds.js';
import { addToScope, type Scope } from './scope.js';
import type { QueryState } from './state.js';
import { analyzeTargetList, type OutColumn } from './target-list.js';

/**
 * A SET list (UPDATE, ON CONFLICT DO UPDATE, MERGE … UPDATE): each column set is a `write-target`
 * needing UPDATE on it; each value is a `compute` use of what flows into it (`SET a = b` stores
 * b). A multi-column `(a, b) = (SELECT …)` source is walked once. Throws 42703 for an unknown column.
 */
export function analyzeSet(
  state: QueryState,
  target: Target,
  scope: Scope,
  targetList: unknown,
  context: string,
): void {
  const env: Env = { state, scope };
  const seenSources = new Set<unknown>();
  for (const t of list(targetList)) {
    const [k, rt] = unwrap(t);
    if (k !== 'ResTarget') unsupported(`a ${k} in SET`, loc(rt));
    const col = targetColumn(target, str(rt.name), loc(rt));
    writeInto(env, col, 'UPDATE', list(rt.indirection), loc(rt));
    const val = obj(rt.val);
    const multi = val ? obj(val.MultiAssignRef) : undefined;
    if (multi) {
      if (seenSources.has(JSON.stringify(multi.source))) continue;
      seenSources.add(JSON.stringify(multi.source));
      walkExpr(env, multi.source, { kind: 'compute', context });
    } else walkExpr(env, rt.val, { kind: 'compute', context });
  }
}

/**
 * An UPDATE. Needs UPDATE on the target; its FROM items are read like a SELECT's (SELECT on
 * each; seed 004: a test in the FROM of an UPDATE is refused like one in a SELECT); WHERE is a
 * test (the row count answers it); RETURNING columns are the statement's result.
 */
export function analyzeUpdate(state: QueryState, body: Obj, scope: Scope): OutColumn[] {
  const target = writeTarget(state, obj(body.relation) ?? {}, 'UPDATE', 'UPDATE');
  addToScope(scope, [{ item: target.item, relVisible: true, colsVisible: true }]);
  analyzeFromClause(state, scope, body.fromClause);
  analyzeSet(state, target, scope, body.targetList, 'UPDATE SET');
  walkExpr({ state, scope }, body.whereClause, { kind: 'test', clause: 'WHERE' });
  return analyzeTargetList({ state, scope }, body.returningList);
}

/** A DELETE: DELETE on the target, USING items read, WHERE a test, RETURNING the result. */
export function analyzeDelete(state: QueryState, body: Obj, scope: Scope): OutColumn[] {
  const target = writeTarget(state, obj(body.relation) ?? {}, 'DELETE', 'DELETE');
  addToScope(scope, [{ item: target.item, relVisible: true, colsVisible: true }]);
  analyzeFromClause(state, scope, body.usingClause);
  walkExpr({ state, scope }, body.whereClause, { kind: 'test', clause: 'WHERE' });
  return analyzeTargetList({ state, scope }, body.returningList);
}

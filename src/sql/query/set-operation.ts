// UNION / INTERSECT / EXCEPT and VALUES: how columns of several branches or rows combine.
import { QueryRefusal } from './errors.js';
import { type Env, plainReference, starReference, walkExpr } from './expression.js';
import { consume, type Lineage, mergeLineages, NO_ORIGIN, UNTRACEABLE } from './lineage.js';
import { list, loc, type Obj, obj, str, unwrap } from './node-kinds.js';
import { resultOnlySortItem } from './result-clauses.js';
import type { Scope } from './scope.js';
import { analyzeSelect } from './select.js';
import type { QueryState } from './state.js';
import type { OutColumn } from './target-list.js';

/**
 * Combines two branches' columns position-wise. UNION ALL passes each column through (one
 * source per branch; Postgres reports no origin). UNION, INTERSECT and EXCEPT compare rows,
 * with or without ALL: every column of every branch is a `test` in SET OPERATION and the result
 * is untraceable (DESIGN.md "Column uses"). Throws 42601 when the branches differ in width.
 */
export function combineBranches(
  state: QueryState,
  op: string,
  all: boolean,
  left: readonly OutColumn[],
  right: readonly OutColumn[],
  location: number,
): OutColumn[] {
  if (left.length !== right.length) {
    const word = op.replace('SETOP_', '');
    throw new QueryRefusal('42601', `each ${word} query must have the same number of columns`, location);
  }
  if (op === 'SETOP_UNION' && all) {
    return left.map((c, i) => ({
      name: c.name,
      lineage: mergeLineages([c.lineage, (right[i] as OutColumn).lineage], NO_ORIGIN),
      location: c.location,
    }));
  }
  for (const c of [...left, ...right])
    consume(state, c.lineage, { kind: 'test', clause: 'SET OPERATION' }, c.location);
  return left.map((c) => ({ name: c.name, lineage: UNTRACEABLE, location: c.location }));
}

/**
 * A set-operation SelectStmt: both branches analyzed as query levels under `scope` (which holds
 * the statement's WITH), combined, then its ORDER BY / LIMIT over result columns only.
 */
export function analyzeSetOperation(state: QueryState, body: Obj, scope: Scope): OutColumn[] {
  const left = analyzeSelect(state, obj(body.larg) ?? {}, scope);
  const right = analyzeSelect(state, obj(body.rarg) ?? {}, scope);
  const out = combineBranches(state, str(body.op), body.all === true, left, right, left[0]?.location ?? -1);
  finishResultOnly(state, scope, out, body);
  return out;
}

function finishResultOnly(state: QueryState, scope: Scope, out: readonly OutColumn[], body: Obj): void {
  const env: Env = { state, scope };
  for (const s of list(body.sortClause)) resultOnlySortItem(env, out, s);
  walkExpr(env, body.limitCount, { kind: 'test', clause: 'LIMIT' });
  walkExpr(env, body.limitOffset, { kind: 'test', clause: 'LIMIT' });
  if (list(body.lockingClause).length > 0) {
    throw new QueryRefusal('0A000', 'FOR UPDATE is not allowed with UNION/INTERSECT/EXCEPT or VALUES');
  }
}

/**
 * VALUES rows: column k of the result carries what each row's k-th expression carries (a plain
 * reference passes through, as in a LATERAL VALUES); names are column1, column2, …
 * Throws 42601 when rows differ in width.
 */
export function analyzeValues(state: QueryState, body: Obj, scope: Scope): OutColumn[] {
  const env: Env = { state, scope };
  // `t.*` in a VALUES row stands for t's columns, one item each (transformExpressionList).
  const rows = list(body.valuesLists).map((r) => {
    const [, rb] = unwrap(r);
    return list(rb.items).flatMap((item): (unknown | Lineage)[] => {
      const star = starReference(env, item);
      return star ? star.map((c) => ({ star: c.lineage })) : [item];
    });
  });
  const width = rows[0]?.length ?? 0;
  const perColumn: Lineage[][] = Array.from({ length: width }, () => []);
  let location = -1;
  for (const row of rows) {
    if (row.length !== width)
      throw new QueryRefusal('42601', 'VALUES lists must all be the same length', location);
    row.forEach((expr, i) => {
      const starred = (expr as { star?: Lineage }).star;
      if (starred) {
        perColumn[i]?.push(starred);
        return;
      }
      const [, eb] = unwrap(expr);
      if (location < 0) location = loc(eb);
      const plain = plainReference(env, expr);
      if (plain) {
        perColumn[i]?.push(plain);
        return;
      }
      const { uses, volatile } = state.collect(() =>
        walkExpr(env, expr, { kind: 'compute', context: 'VALUES expression' }),
      );
      // Recorded now: an unreferenced VALUES column is still computed (see target-list.ts).
      state.sink.push(...uses);
      perColumn[i]?.push({ ...UNTRACEABLE, deferred: volatile ? [] : uses });
    });
  }
  const out = perColumn.map((ls, i) => ({
    name: `column${i + 1}`,
    lineage: mergeLineages(ls, NO_ORIGIN),
    location,
  }));
  finishResultOnly(state, scope, out, body);
  return out;
}

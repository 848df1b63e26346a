// INSERT: target columns, the stored values, ON CONFLICT, RETURNING.

import { type Target, targetColumn, writeInto, writeTarget } from './dml-target.js';
import { QueryRefusal, unsupported } from './errors.js';
import { type Env, walkExpr } from './expression.js';
import { consume, UNTRACEABLE } from './lineage.js';
import { list, loc, type Obj, obj, str, unwrap } from './node-kinds.js';
import { addToScope, type FromItem, newScope, type Scope } from './scope.js';
import { analyzeSubquery } from './select.js';
import type { QueryState } from './state.js';
import { analyzeTargetList, type OutColumn } from './target-list.js';
import { analyzeSet } from './update-delete.js';

/**
 * An INSERT. Needs INSERT on the target (and on each target column); each target column is a
 * `write-target`; every value stored is a `compute` use of what flows into it (seed 004: a write
 * is refused where it reads a hidden column, `INSERT INTO other (c) SELECT email FROM users`).
 * ON CONFLICT: its target columns and predicate are `test` uses in ON CONFLICT, and without a
 * target every unique column of the table is (Postgres checks every unique index); DO UPDATE
 * needs UPDATE too. RETURNING columns are the statement's result.
 * Throws 42601 (more values than columns), 42703, 42P01, 42809, 0A000.
 */
export function analyzeInsert(state: QueryState, body: Obj, scope: Scope): OutColumn[] {
  const target = writeTarget(state, obj(body.relation) ?? {}, 'INSERT', 'INSERT');
  const env: Env = { state, scope };
  const named = list(body.cols).map((c) => {
    const [, rt] = unwrap(c);
    return { col: targetColumn(target, str(rt.name), loc(rt)), ind: list(rt.indirection), location: loc(rt) };
  });
  let width = 0;
  if (body.selectStmt) {
    const sourceScope: Scope = { parent: null, namespace: [], ctes: scope.ctes };
    const out = analyzeSubquery(state, body.selectStmt, sourceScope);
    width = out.length;
    const [, sb] = unwrap(body.selectStmt);
    const ctx = list(sb.valuesLists).length > 0 ? 'INSERT … VALUES' : 'INSERT … SELECT';
    for (const c of out) consume(state, c.lineage, { kind: 'compute', context: ctx }, c.location);
  }
  const targets =
    named.length > 0
      ? named
      : target.rel.columns.slice(0, width).map((c) => ({
          col: { schema: target.rel.schema, table: target.rel.name, column: c.name },
          ind: [] as unknown[],
          location: target.item.location,
        }));
  if (width > targets.length)
    throw new QueryRefusal('42601', 'INSERT has more expressions than target columns', target.item.location);
  if (body.selectStmt && width < targets.length) {
    throw new QueryRefusal('42601', 'INSERT has more target columns than expressions', target.item.location);
  }
  for (const t of targets) writeInto(env, t.col, 'INSERT', t.ind, t.location);
  const targetScope = newScope(null, scope.ctes);
  addToScope(targetScope, [{ item: target.item, relVisible: true, colsVisible: true }]);
  const conflict = obj(body.onConflictClause);
  if (conflict) onConflict(state, target, targetScope, conflict);
  return analyzeTargetList({ state, scope: targetScope }, body.returningList);
}

function onConflict(state: QueryState, target: Target, targetScope: Scope, clause: Obj): void {
  const env: Env = { state, scope: targetScope };
  const test = { kind: 'test', clause: 'ON CONFLICT' } as const;
  const infer = obj(clause.infer);
  const elems = infer ? list(infer.indexElems) : [];
  if (elems.length > 0) {
    for (const e of elems) {
      const [k, ie] = unwrap(e);
      if (k !== 'IndexElem') unsupported(`a ${k} in ON CONFLICT`);
      if (typeof ie.name === 'string') {
        walkExpr(
          env,
          { ColumnRef: { fields: [{ String: { sval: ie.name } }], location: target.item.location } },
          test,
        );
      } else walkExpr(env, ie.expr, test);
    }
    walkExpr(env, infer?.whereClause, test);
  } else {
    // No inference target (or ON CONSTRAINT): the arbiters are the table's unique indexes.
    for (const c of target.item.columns) {
      const col = target.rel.columns.find((x) => x.name === c.name);
      if (col?.unique) consume(state, c.lineage, test, target.item.location);
    }
  }
  if (str(clause.action) === 'ONCONFLICT_UPDATE') {
    state.requireTable(
      'UPDATE',
      target.rel.schema,
      target.rel.name,
      'INSERT … ON CONFLICT DO UPDATE',
      target.item.location,
    );
    const excluded: FromItem = {
      ...target.item,
      refname: 'excluded',
      schema: null,
      base: null,
      relation: null,
      columns: target.item.columns.map((c) => ({ name: c.name, lineage: UNTRACEABLE })),
    };
    const updScope = newScope(null, targetScope.ctes);
    addToScope(updScope, [
      { item: target.item, relVisible: true, colsVisible: true },
      { item: excluded, relVisible: true, colsVisible: false },
    ]);
    analyzeSet(state, target, updScope, clause.targetList, 'ON CONFLICT DO UPDATE SET');
    walkExpr({ state, scope: updScope }, clause.whereClause, test);
  }
}

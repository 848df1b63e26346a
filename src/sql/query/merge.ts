// MERGE: target, source, ON condition, and the requirement and uses of each WHEN branch.

import { targetColumn, writeInto, writeTarget } from './dml-target.js';
import { unsupported } from './errors.js';
import { type Env, walkExpr } from './expression.js';
import { fromItem } from './from-clause.js';
import { list, loc, type Obj, obj, str, unwrap } from './node-kinds.js';
import { addToScope, type Scope } from './scope.js';
import type { QueryState } from './state.js';
import type { OutColumn } from './target-list.js';
import { analyzeSet } from './update-delete.js';

/**
 * A MERGE (PostgreSQL 15: no RETURNING). The join condition is a `test` in MERGE ON, each WHEN
 * condition a `test` in MERGE WHEN; each branch needs the privilege of its action on the target
 * (UPDATE, INSERT, DELETE; DO NOTHING none); UPDATE SET and INSERT columns are `write-target`s
 * and their values `compute` uses. Throws 42703, 42P01, 0A000.
 */
export function analyzeMerge(state: QueryState, body: Obj, scope: Scope): OutColumn[] {
  const rv = obj(body.relation) ?? {};
  const whens = list(body.mergeWhenClauses).map((w) => {
    const [k, wb] = unwrap(w);
    if (k !== 'MergeWhenClause') unsupported(`a ${k} in MERGE`, loc(wb));
    return wb;
  });
  const firstAction = str(whens[0]?.commandType);
  const target = writeTarget(state, rv, actionOf(firstAction) ?? 'UPDATE', 'MERGE');
  const source = fromItem(state, scope, body.sourceRelation);
  addToScope(scope, [{ item: target.item, relVisible: true, colsVisible: true }, ...source.nsitems]);
  const env: Env = { state, scope };
  walkExpr(env, body.joinCondition, { kind: 'test', clause: 'MERGE ON' });
  for (const w of whens) {
    walkExpr(env, w.condition, { kind: 'test', clause: 'MERGE WHEN' });
    const cmd = str(w.commandType);
    const action = actionOf(cmd);
    if (action)
      state.requireTable(
        action,
        target.rel.schema,
        target.rel.name,
        `MERGE … ${action}`,
        target.item.location,
      );
    if (cmd === 'CMD_UPDATE') analyzeSet(state, target, scope, w.targetList, 'MERGE UPDATE SET');
    if (cmd === 'CMD_INSERT') {
      const cols = list(w.targetList).map((t) => {
        const [, rt] = unwrap(t);
        return {
          col: targetColumn(target, str(rt.name), loc(rt)),
          ind: list(rt.indirection),
          location: loc(rt),
        };
      });
      const values = list(w.values);
      const targets =
        cols.length > 0
          ? cols
          : target.rel.columns.slice(0, values.length).map((c) => ({
              col: { schema: target.rel.schema, table: target.rel.name, column: c.name },
              ind: [] as unknown[],
              location: target.item.location,
            }));
      for (const t of targets) writeInto(env, t.col, 'INSERT', t.ind, t.location);
      for (const v of values) walkExpr(env, v, { kind: 'compute', context: 'MERGE INSERT' });
    }
  }
  return [];
}

function actionOf(cmd: string): 'UPDATE' | 'INSERT' | 'DELETE' | null {
  if (cmd === 'CMD_UPDATE') return 'UPDATE';
  if (cmd === 'CMD_INSERT') return 'INSERT';
  if (cmd === 'CMD_DELETE') return 'DELETE';
  return null;
}

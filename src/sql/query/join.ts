// JOIN: ON, USING and NATURAL, merged columns, and which names each side keeps visible.
import type { TestClause } from '../analysis-types.js';
import { QueryRefusal } from './errors.js';
import { type Env, walkExpr } from './expression.js';
import { type FromResult, fromItem } from './from-clause.js';
import { computedFrom, consume, type Lineage, requireSelect } from './lineage.js';
import { names, type Obj, obj, str } from './node-kinds.js';
import { renameColumns } from './relation-item.js';
import type { FromItem, ItemColumn, NsItem, Scope } from './scope.js';
import type { QueryState } from './state.js';

function sideColumn(side: FromItem, name: string, which: string, location: number): ItemColumn {
  const hits = side.columns.filter((c) => c.name === name);
  if (hits.length > 1) {
    throw new QueryRefusal(
      '42702',
      `common column name "${name}" appears more than once in ${which} table`,
      location,
    );
  }
  const c = hits[0];
  if (!c)
    throw new QueryRefusal(
      '42703',
      `column "${name}" specified in USING clause does not exist in ${which} table`,
      location,
    );
  return c;
}

/**
 * A JoinExpr. Both sides are analyzed (the right one LATERAL over the left and the earlier items);
 * ON is a `test` in JOIN ON; each USING column, and each common column of a NATURAL join
 * (computed from both sides' columns), is a `test` of both sides' columns. The join's columns
 * are the merged ones first, then the rest of the left and right side (Postgres's order). A
 * merged column carries the left column (INNER, LEFT), the right one (RIGHT) or a COALESCE of
 * both (FULL, untraceable). With an alias, the sides are no longer reachable by their names.
 * Throws 42703 / 42702 for a USING column missing from or doubled in a side.
 */
export function joinItem(state: QueryState, level: Scope, body: Obj): FromResult {
  const left = fromItem(state, level, body.larg);
  const rightLevel: Scope = {
    parent: level.parent,
    namespace: [...level.namespace, ...left.nsitems],
    ctes: level.ctes,
  };
  const right = fromItem(state, rightLevel, body.rarg);
  const location = left.whole.location;
  const natural = body.isNatural === true;
  let common = names(body.usingClause);
  if (natural) {
    const rightNames = new Set(right.whole.columns.map((c) => c.name));
    common = [...new Set(left.whole.columns.map((c) => c.name))].filter((n) => rightNames.has(n));
  }
  const clause: TestClause = natural ? 'NATURAL JOIN' : 'JOIN USING';
  const jointype = str(body.jointype);
  const merged: ItemColumn[] = [];
  for (const name of common) {
    const l = sideColumn(left.whole, name, 'left', location);
    const r = sideColumn(right.whole, name, 'right', location);
    for (const c of [l, r]) {
      requireSelect(state, c.lineage, clause, location);
      consume(state, c.lineage, { kind: 'test', clause }, location);
    }
    let lineage: Lineage;
    if (jointype === 'JOIN_FULL')
      lineage = computedFrom(state, [l.lineage, r.lineage], 'FULL JOIN merged column', location);
    else lineage = jointype === 'JOIN_RIGHT' ? r.lineage : l.lineage;
    merged.push({ name, lineage });
  }
  const commonSet = new Set(common);
  // The join's columns are its sides' columns (the same Vars): a reference through the join
  // needs SELECT on the column it reaches, as a reference to the side would.
  const rest = (side: FromItem): ItemColumn[] => side.columns.filter((c) => !commonSet.has(c.name));
  const alias = obj(body.alias);
  const joined: FromItem = {
    refname: alias ? str(alias.aliasname) : '',
    schema: null,
    columns: renameColumns(
      [...merged, ...rest(left.whole), ...rest(right.whole)],
      alias,
      alias ? str(alias.aliasname) : '',
      location,
    ),
    base: null,
    relation: null,
    open: left.whole.open || right.whole.open,
    location,
  };
  // ON sees the join's two inputs and outer query levels only, not the items before the join in
  // this FROM list (transformJoinOnClause): `FROM a, b JOIN c ON x` reads an outer query's x, not
  // a's (resolution differential).
  const onScope: Scope = {
    parent: level.parent,
    namespace: [...left.nsitems, ...right.nsitems],
    ctes: level.ctes,
  };
  const env: Env = { state, scope: onScope };
  walkExpr(env, body.quals, { kind: 'test', clause: 'JOIN ON' });
  const sides: NsItem[] = [...left.nsitems, ...right.nsitems].map((ns) => ({
    item: ns.item,
    relVisible: alias ? false : ns.relVisible,
    colsVisible: false,
  }));
  const nsitems: NsItem[] = [...sides, { item: joined, relVisible: alias !== undefined, colsVisible: true }];
  const usingAlias = obj(body.join_using_alias);
  if (usingAlias) {
    nsitems.push({
      item: { ...joined, refname: str(usingAlias.aliasname), columns: merged },
      relVisible: true,
      colsVisible: false,
    });
  }
  return { nsitems, whole: joined };
}

// FROM clauses: one handler per FROM item kind, LATERAL visibility, and the items each adds to its level.
import { unsupported } from './errors.js';
import { type Env, walkExpr, walkList } from './expression.js';
import { functionItem, tableFuncItem } from './function-item.js';
import { joinItem } from './join.js';
import { passUp } from './lineage.js';
import { list, loc, type NodeName, type Obj, obj, str, unwrap } from './node-kinds.js';
import { rangeVarItem, renameColumns } from './relation-item.js';
import { addToScope, type FromItem, type NsItem, type Scope } from './scope.js';
import { analyzeSubquery } from './select.js';
import type { QueryState } from './state.js';

/** What one FROM item adds to its level: the namespace entries, and the item its columns form. */
export interface FromResult {
  readonly nsitems: NsItem[];
  readonly whole: FromItem;
}

type FromHandler = (state: QueryState, level: Scope, body: Obj) => FromResult;

function single(item: FromItem): FromResult {
  return { nsitems: [{ item, relVisible: true, colsVisible: true }], whole: item };
}

/**
 * The scope a subquery or function in FROM sees: LATERAL ones (functions always are) see the
 * items already added at this level; others only the enclosing query levels and the WITH.
 */
export function sideScope(level: Scope, lateral: boolean): Scope {
  return { parent: level.parent, namespace: lateral ? [...level.namespace] : [], ctes: level.ctes };
}

function rangeSubselect(state: QueryState, level: Scope, body: Obj): FromResult {
  const out = analyzeSubquery(state, body.subquery, sideScope(level, body.lateral === true));
  const alias = obj(body.alias);
  const refname = alias ? str(alias.aliasname) : '';
  if (!alias) unsupported('a subquery in FROM without an alias');
  const cols = out.map((c) => ({ name: c.name, lineage: passUp(c.lineage) }));
  return single({
    refname,
    schema: null,
    columns: renameColumns(cols, alias, refname, -1),
    base: null,
    relation: null,
    open: false,
    location: out[0]?.location ?? -1,
  });
}

function rangeTableSample(state: QueryState, level: Scope, body: Obj): FromResult {
  const r = fromItem(state, level, body.relation);
  const env: Env = { state, scope: sideScope(level, true) };
  walkList(env, body.args, { kind: 'compute', context: 'TABLESAMPLE' });
  walkExpr(env, body.repeatable, { kind: 'compute', context: 'TABLESAMPLE' });
  return r;
}

/**
 * One handler per node kind that can stand in a FROM list in PostgreSQL 15's raw grammar;
 * anything else is refused (0A000).
 */
const FROM_HANDLERS: Partial<Record<NodeName, FromHandler>> = {
  RangeVar: (state, level, body) => single(rangeVarItem(state, level, body)),
  RangeSubselect: rangeSubselect,
  RangeFunction: (state, level, body) => single(functionItem(state, sideScope(level, true), body)),
  RangeTableFunc: (state, level, body) => single(tableFuncItem(state, sideScope(level, true), body)),
  RangeTableSample: rangeTableSample,
  JoinExpr: (state, level, body) => joinItem(state, level, body),
};

/** Analyzes one FROM item (`level` holds the items before it, for LATERAL). Throws 0A000 for an unknown kind. */
export function fromItem(state: QueryState, level: Scope, node: unknown): FromResult {
  const [k, body] = unwrap(node);
  const h = FROM_HANDLERS[k];
  if (!h) return unsupported(`a ${k} in FROM`, loc(body));
  return h(state, level, body);
}

/** Analyzes a FROM list into `scope`, item after item (each later one may be LATERAL over earlier ones). */
export function analyzeFromClause(state: QueryState, scope: Scope, from: unknown): void {
  for (const node of list(from)) addToScope(scope, fromItem(state, scope, node).nsitems);
}

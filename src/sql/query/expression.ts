// The expression walker: one handler per expression node kind, every other node kind refused (0A000).
import type { CatalogFunction } from '../../catalog/types.js';
import type { TestClause } from '../analysis-types.js';
import { BUILTIN_OPERATOR_NAMES } from './builtin-operators.js';
import { resolveFunction } from './catalog-names.js';
import { type Resolved, resolveColumnRef } from './column-ref.js';
import { QueryRefusal, unsupported } from './errors.js';
import { callSignature } from './function-result.js';
import { consume, consumeWholeRow, type Lineage, requireSelect } from './lineage.js';
import { list, loc, type NodeName, names, type Obj, obj, str, unwrap } from './node-kinds.js';
import { fieldOfRows, rowFieldLineage, rowItems } from './row-fields.js';
import type { Scope } from './scope.js';
import { analyzeSubquery } from './select.js';
import { type Mode, nested, type QueryState, testIn } from './state.js';

/** Where an expression is walked: the analysis state and the scope its names resolve in. */
export interface Env {
  readonly state: QueryState;
  readonly scope: Scope;
}

type Handler = (env: Env, body: Obj, mode: Mode) => void;

/** Walks an expression node, recording every column use under `mode`. Throws 0A000 for a node kind without a rule. */
export function walkExpr(env: Env, node: unknown, mode: Mode): void {
  if (node === undefined || node === null) return;
  const [kind, body] = unwrap(node);
  const h = (EXPRESSION_HANDLERS as Partial<Record<NodeName, Handler>>)[kind];
  if (!h) unsupported(`a ${kind} node in an expression`, loc(body));
  h(env, body, mode);
}

/** Walks each node of a list under the same mode. */
export function walkList(env: Env, nodes: unknown, mode: Mode): void {
  for (const n of list(nodes)) walkExpr(env, n, mode);
}

/**
 * Records a reference to a resolved column or row: the column-level SELECT requirement it adds
 * (whole rows: every column) and its uses under `mode`.
 */
export function referenceResolved(env: Env, r: Resolved, mode: Mode, location: number): void {
  const { state } = env;
  if (r.kind === 'column') {
    requireSelect(state, r.column.lineage, 'column reference', location);
    consume(state, r.column.lineage, mode, location);
    return;
  }
  const items = r.kind === 'row' ? [r.item] : r.items;
  for (const item of items) consumeWholeRow(state, item, location);
}

/**
 * The lineage of a plain reference (`c`, `t.c`, `(t).c`, `t` as a whole row), with its
 * requirement recorded but no use; null when `node` is anything else (an expression).
 * Source: the only references that pass a value unchanged (DESIGN.md "Column uses": output).
 */
export function plainReference(env: Env, node: unknown): Lineage | null {
  const [kind, body] = unwrap(node);
  if (kind === 'ColumnRef') {
    const r = resolveColumnRef(env.scope, body, loc(body));
    if (r.kind === 'star') return null;
    return lineageOfResolved(env, r, loc(body));
  }
  if (kind === 'A_Indirection') {
    const ind = list(body.indirection);
    const arg = obj(body.arg);
    if (ind.length !== 1 || !arg || !('ColumnRef' in arg)) return null;
    const [ik, ib] = unwrap(ind[0]);
    if (ik !== 'String') return null;
    const argBody = obj(arg.ColumnRef) ?? {};
    const r = resolveColumnRef(env.scope, argBody, loc(argBody));
    const items = rowItems(r);
    if (items.length === 0) return null;
    // (t).c is the column itself; a field of a row carried in a column is a FieldSelect, no origin.
    return rowFieldLineage(env.state, r, items, str(ib.sval), loc(argBody));
  }
  return null;
}

function lineageOfResolved(env: Env, r: Resolved, location: number): Lineage | null {
  const { state } = env;
  if (r.kind === 'column') {
    requireSelect(state, r.column.lineage, 'column reference', location);
    return r.column.lineage;
  }
  if (r.kind === 'row') {
    for (const c of r.item.columns) {
      requireSelect(state, c.lineage, 'whole-row reference', location);
    }
    const rel = r.item.relation;
    return {
      sources: [],
      deferred: [],
      rows: [r.item],
      origin: rel ? { tableOid: rel.oid, attnum: 0 } : { tableOid: 0, attnum: 0 },
      requires: null,
    };
  }
  return null;
}

/**
 * The columns a `*` or `t.*` ColumnRef in a ROW() or VALUES list stands for (each with its SELECT
 * requirement made, as a star expansion), or null when `node` is not such a reference.
 * Source: Postgres transformExpressionList expands a star there into one item per column.
 */
export function starReference(env: Env, node: unknown): { name: string; lineage: Lineage }[] | null {
  const [kind, body] = unwrap(node);
  if (kind !== 'ColumnRef') return null;
  const fields = list(body.fields);
  const last = obj(fields[fields.length - 1]);
  if (!last || !('A_Star' in last)) return null;
  const r = resolveColumnRef(env.scope, body, loc(body));
  if (r.kind !== 'star') return null;
  const out: { name: string; lineage: Lineage }[] = [];
  for (const item of r.items) {
    if (item.open)
      unsupported(`* over function ${item.refname}, whose columns the catalog does not describe`, loc(body));
    for (const c of item.columns) {
      requireSelect(env.state, c.lineage, 'star expansion', loc(body));
      out.push(c);
    }
  }
  return out;
}

/** ROW(…): each item computed into the row, a star expanded into its columns. */
function rowExpr(env: Env, body: Obj, mode: Mode): void {
  const m = nested(mode, 'row');
  for (const a of list(body.args)) {
    const star = starReference(env, a);
    if (!star) walkExpr(env, a, m);
    else for (const c of star) consume(env.state, c.lineage, m, loc(unwrap(a)[1]));
  }
}

function columnRef(env: Env, body: Obj, mode: Mode): void {
  const r = resolveColumnRef(env.scope, body, loc(body));
  referenceResolved(env, r, mode, loc(body));
}

function aExpr(env: Env, body: Obj, mode: Mode): void {
  const op = names(body.name);
  const opName = op[op.length - 1] ?? '';
  // An operator named with a schema other than pg_catalog, or whose name pg_catalog does not
  // define, is user-defined: its function may run any code (DESIGN.md "Side channels": MANAGE).
  if (op.length > 1 && op[0] !== 'pg_catalog') env.state.requireManage(`operator ${op.join('.')}`, loc(body));
  const kind = str(body.kind);
  // BETWEEN's name is the keyword (it expands to >= and <=).
  if (op.length === 1 && !kind.includes('BETWEEN') && !BUILTIN_OPERATOR_NAMES.has(opName))
    env.state.requireManage(`operator ${opName}`, loc(body));
  const ctx = kind === 'AEXPR_NULLIF' ? 'nullif' : `operator ${op[op.length - 1] ?? kind}`;
  walkExpr(env, body.lexpr, nested(mode, ctx));
  walkExpr(env, body.rexpr, nested(mode, ctx));
}

/** The hint Postgres gives with 42883 for a call no function matches (ParseFuncOrColumn). */
const NO_FUNCTION_HINT =
  'No function matches the given name and argument types. You might need to add explicit type casts.';

/**
 * The function a call names (resolveFunction); for a name no function has, 42883 worded as
 * Postgres words it: `function f(integer, unknown) does not exist` with its hint, when the
 * argument types are plain to see (callSignature), else naming the function alone.
 */
function resolveCalled(env: Env, fname: readonly string[], body: Obj): CatalogFunction {
  const { state } = env;
  try {
    return resolveFunction(state.catalog.functions, state.path, fname, list(body.args).length, loc(body));
  } catch (e) {
    if (!(e instanceof QueryRefusal) || e.sqlstate !== '42883') throw e;
    const sig = callSignature(state.catalog, state.path, env.scope, body);
    if (sig === null) throw e;
    throw new QueryRefusal(
      '42883',
      `function ${fname.join('.')}(${sig}) does not exist`,
      loc(body),
      NO_FUNCTION_HINT,
    );
  }
}

function funcCall(env: Env, body: Obj, mode: Mode): void {
  const { state } = env;
  const fname = names(body.funcname);
  const args = list(body.args);
  const fn = resolveCalled(env, fname, body);
  state.callFunction(fn, loc(body));
  const ctx = `function ${fn.name}`;
  // count(DISTINCT x) counts the distinct values: the same question SELECT DISTINCT answers.
  const argMode = body.agg_distinct ? testIn(mode, 'DISTINCT') : nested(mode, ctx);
  for (const a of args) walkExpr(env, a, argMode);
  const orderClause: TestClause = body.agg_within_group ? 'WITHIN GROUP' : 'ORDER BY';
  walkList(env, body.agg_order, testIn(mode, orderClause));
  walkExpr(env, body.agg_filter, testIn(mode, 'FILTER'));
  const over = obj(body.over);
  if (over) walkWindowDef(env, over, mode);
}

/** A window definition (inline OVER (…) or WINDOW w AS (…)): PARTITION BY and ORDER BY are tests. */
export function walkWindowDef(env: Env, def: Obj, mode: Mode): void {
  walkList(env, def.partitionClause, testIn(mode, 'WINDOW'));
  walkList(env, def.orderClause, testIn(mode, 'WINDOW'));
  walkExpr(env, def.startOffset, testIn(mode, 'WINDOW'));
  walkExpr(env, def.endOffset, testIn(mode, 'WINDOW'));
}

function subLink(env: Env, body: Obj, mode: Mode): void {
  const type = str(body.subLinkType);
  const out = analyzeSubquery(env.state, body.subselect, env.scope);
  // A subquery that selects a column to compare it is the same test written longer (seed 004):
  // EXISTS / IN / ANY / ALL consume its columns the way the surrounding clause does; a scalar or
  // ARRAY subquery's result is a computed value.
  const ctx =
    type === 'EXPR_SUBLINK' || type === 'MULTIEXPR_SUBLINK'
      ? 'scalar subquery'
      : type === 'ARRAY_SUBLINK'
        ? 'ARRAY subquery'
        : `${type.replace('_SUBLINK', '')} subquery`;
  walkExpr(env, body.testexpr, nested(mode, ctx));
  for (const c of out) consume(env.state, c.lineage, nested(mode, ctx), c.location);
}

function caseExpr(env: Env, body: Obj, mode: Mode): void {
  walkExpr(env, body.arg, testIn(mode, 'CASE'));
  for (const w of list(body.args)) {
    const [k, wb] = unwrap(w);
    if (k !== 'CaseWhen') unsupported(`a ${k} in CASE`, loc(wb));
    walkExpr(env, wb.expr, testIn(mode, 'CASE'));
    walkExpr(env, wb.result, nested(mode, 'CASE'));
  }
  walkExpr(env, body.defresult, nested(mode, 'CASE'));
}

function indirection(env: Env, body: Obj, mode: Mode): void {
  const ind = list(body.indirection);
  const arg = obj(body.arg);
  let rest = ind;
  if (arg && 'ColumnRef' in arg && ind.length > 0) {
    const argBody = obj(arg.ColumnRef) ?? {};
    const r = resolveColumnRef(env.scope, argBody, loc(argBody));
    const items = rowItems(r);
    const [k0, b0] = unwrap(ind[0]);
    if (items.length > 0 && k0 === 'String') {
      // (u).ssn is a reference to the column ssn of u, and (x).ssn one to ssn of every row x
      // carries (DESIGN.md "Column uses"); ((x).y).ssn follows the rows y carries.
      let l = rowFieldLineage(env.state, r, items, str(b0.sval), loc(argBody));
      rest = ind.slice(1);
      while (l.rows.length > 0 && rest[0] !== undefined) {
        const [nk, nb] = unwrap(rest[0]);
        if (nk !== 'String') break;
        l = fieldOfRows(env.state, l, str(nb.sval), loc(argBody));
        rest = rest.slice(1);
      }
      consume(env.state, l, rest.length === 0 ? mode : nested(mode, 'field selection'), loc(argBody));
    } else if (items.length > 0 && k0 === 'A_Star') {
      referenceResolved(env, r, mode, loc(argBody));
      rest = ind.slice(1);
    } else {
      referenceResolved(env, r, nested(mode, 'field selection'), loc(argBody));
    }
  } else {
    walkExpr(env, body.arg, nested(mode, 'field selection'));
  }
  for (const i of rest) {
    const [k, b] = unwrap(i);
    if (k === 'A_Indices') {
      walkExpr(env, b.lidx, nested(mode, 'subscript'));
      walkExpr(env, b.uidx, nested(mode, 'subscript'));
    } else if (k !== 'String' && k !== 'A_Star') unsupported(`a ${k} in an indirection`);
  }
}

function xmlExpr(env: Env, body: Obj, mode: Mode): void {
  walkList(env, body.args, nested(mode, 'xml'));
  for (const n of list(body.named_args)) {
    const [k, b] = unwrap(n);
    if (k !== 'ResTarget') unsupported(`a ${k} in an XML expression`);
    walkExpr(env, b.val, nested(mode, 'xml'));
  }
}

const nothing: Handler = () => {};

/**
 * One handler per node kind that the raw parse tree of PostgreSQL 15 can hold in an expression.
 * Every node kind of libpg-query 15 is listed either here or in NOT_EXPRESSIONS (not-expressions.ts), so a new kind
 * is a compile error, and a non-expression kind met in an expression is refused (0A000).
 */
const EXPRESSION_HANDLERS = {
  ColumnRef: columnRef,
  ParamRef: nothing, // $1: untraceable, no column use
  A_Const: nothing,
  String: nothing,
  Integer: nothing,
  Float: nothing,
  Boolean: nothing,
  BitString: nothing,
  SQLValueFunction: nothing, // current_user, current_date, …
  SetToDefault: nothing,
  CurrentOfExpr: nothing, // WHERE CURRENT OF c: the cursor was analyzed when declared
  A_Expr: aExpr,
  BoolExpr: (env, b, mode) => walkList(env, b.args, nested(mode, 'boolean')),
  FuncCall: funcCall,
  // Types whose input runs user code are checked for every TypeName of the statement (user-code-types.ts).
  TypeCast: (env, b, mode) => walkExpr(env, b.arg, nested(mode, 'cast')),
  CollateClause: (env, b, mode) => walkExpr(env, b.arg, nested(mode, 'collate')),
  SubLink: subLink,
  CaseExpr: caseExpr,
  CoalesceExpr: (env, b, mode) => walkList(env, b.args, nested(mode, 'coalesce')),
  MinMaxExpr: (env, b, mode) =>
    walkList(env, b.args, nested(mode, str(b.op) === 'IS_LEAST' ? 'least' : 'greatest')),
  NullTest: (env, b, mode) => walkExpr(env, b.arg, nested(mode, 'IS NULL')),
  BooleanTest: (env, b, mode) => walkExpr(env, b.arg, nested(mode, 'boolean test')),
  A_ArrayExpr: (env, b, mode) => walkList(env, b.elements, nested(mode, 'array')),
  A_Indirection: indirection,
  RowExpr: rowExpr,
  GroupingFunc: (env, b, mode) => walkList(env, b.args, nested(mode, 'grouping')),
  NamedArgExpr: (env, b, mode) => walkExpr(env, b.arg, mode),
  XmlExpr: xmlExpr,
  XmlSerialize: (env, b, mode) => walkExpr(env, b.expr, nested(mode, 'xmlserialize')),
  List: (env, b, mode) => walkList(env, b.items, mode),
  SortBy: (env, b, mode) => walkExpr(env, b.node, mode),
  MultiAssignRef: (env, b, mode) => walkExpr(env, b.source, mode),
} satisfies Partial<Record<NodeName, Handler>>;

/** The node kinds an expression may hold (the keys of EXPRESSION_HANDLERS); every other NodeName is in NOT_EXPRESSIONS (not-expressions.ts). */
export type ExpressionNode = keyof typeof EXPRESSION_HANDLERS;

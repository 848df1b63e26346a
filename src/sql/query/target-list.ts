// Result lists (SELECT targets, RETURNING): star expansion, plain references and deferred expressions.
import { resolveFunction } from './catalog-names.js';
import { resolveColumnRef } from './column-ref.js';
import { QueryRefusal, unsupported } from './errors.js';
import { type Env, plainReference, walkExpr } from './expression.js';
import { figureColname } from './figure-colname.js';
import { functionShape } from './function-result.js';
import { type Lineage, NO_ORIGIN, requireSelect } from './lineage.js';
import { noOpCastOrigin } from './no-op-cast.js';
import { list, loc, names, type Obj, obj, str, unwrap } from './node-kinds.js';
import { rowStarColumns } from './row-fields.js';
import type { FromItem } from './scope.js';

/** One column of a query's result: its name, lineage and the location of the expression producing it. */
export interface OutColumn {
  readonly name: string;
  readonly lineage: Lineage;
  readonly location: number;
}

/**
 * The columns `*` or `t.*` expands to: every column of each item in attnum (or FROM) order, a
 * join's merged USING/NATURAL columns first. Throws 0A000 for a function whose columns the
 * catalog does not describe (a star it cannot expand).
 */
export function expandStar(env: Env, items: readonly FromItem[], location: number): OutColumn[] {
  const out: OutColumn[] = [];
  for (const item of items) {
    if (item.open)
      unsupported(`* over function ${item.refname}, whose columns the catalog does not describe`, location);
    for (const c of item.columns) {
      requireSelect(env.state, c.lineage, 'star expansion', location);
      out.push({ name: c.name, lineage: c.lineage, location });
    }
  }
  return out;
}

/** `(t).*`, `(s.x).*`: the columns of the row a reference holds. */
function expandRowStar(env: Env, val: Obj, location: number): OutColumn[] | null {
  const ind = list(val.indirection);
  const last = ind[ind.length - 1];
  if (ind.length !== 1 || !last || !('A_Star' in (obj(last) ?? {}))) return null;
  const arg = obj(val.arg);
  if (arg && 'FuncCall' in arg) return functionRowStar(env, val.arg, obj(arg.FuncCall) ?? {}, location);
  if (!arg || !('ColumnRef' in arg)) return unsupported('(expression).* over a computed row', location);
  const argBody = obj(arg.ColumnRef) ?? {};
  const r = resolveColumnRef(env.scope, argBody, loc(argBody));
  if (r.kind === 'row') return expandStar(env, [r.item], location);
  if (r.kind === 'column' && r.column.lineage.rows.length > 0) {
    const carrier = r.column.lineage;
    requireSelect(env.state, carrier, 'column reference', location);
    if (carrier.sources.length > 0 || carrier.deferred.length > 0)
      unsupported('(x).* over a column that carries computed rows', location);
    for (const item of carrier.rows)
      for (const c of item.columns) requireSelect(env.state, c.lineage, 'field of a row value', location);
    // Postgres reports no origin for the fields of a row carried in a column (FieldSelect).
    return rowStarColumns(carrier.rows, location).map((c) => ({
      name: c.name,
      lineage: c.lineage,
      location,
    }));
  }
  return unsupported('(column).* over a composite-typed column', location);
}

/**
 * `(f(…)).*`: the columns of the row a function call returns, as in FROM (its OUT parameters or
 * the attributes of its composite result: function-result.ts), each computed from the call's
 * arguments (Postgres expands it to one field selection per column, origin 0). A call whose
 * columns the catalog does not fix is refused 0A000 (a scalar result is not a row: Postgres
 * refuses it too).
 */
function functionRowStar(env: Env, call: unknown, fb: Obj, location: number): OutColumn[] {
  const { state, scope } = env;
  const fname = names(fb.funcname);
  const fn = resolveFunction(state.catalog.functions, state.path, fname, list(fb.args).length, loc(fb));
  const shape = functionShape(state.catalog, state.path, scope, fn, fb);
  if (shape.kind !== 'columns') return unsupported('(expression).* over a computed row', location);
  const { uses, volatile } = state.collect(() =>
    walkExpr(env, call, { kind: 'compute', context: 'select list expression' }),
  );
  state.sink.push(...uses);
  return shape.names.map((name) => ({
    name,
    lineage: { sources: [], deferred: volatile ? [] : uses, rows: [], origin: NO_ORIGIN, requires: null },
    location,
  }));
}

/**
 * Analyzes a target list (SELECT list or RETURNING) in `env.scope` and returns its columns.
 * A plain reference passes its lineage on; any other expression is walked once, its uses kept
 * as the column's deferred uses (replayed where the column is consumed) and also recorded at once:
 * Postgres evaluates an unreferenced output of a CTE it materializes or a subquery it does not
 * flatten, so an error in it is an oracle (attack corpus: "unreferenced computed CTE column").
 */
export function analyzeTargetList(env: Env, targets: unknown): OutColumn[] {
  const out: OutColumn[] = [];
  for (const t of list(targets)) {
    const [k, rt] = unwrap(t);
    if (k !== 'ResTarget') unsupported(`a ${k} in a target list`, loc(rt));
    const val = rt.val;
    const location = loc(rt);
    const [vk, vb] = unwrap(val, location);
    if (vk === 'ColumnRef') {
      const r = resolveColumnRef(env.scope, vb, loc(vb));
      if (r.kind === 'star') {
        out.push(...expandStar(env, r.items, loc(vb)));
        continue;
      }
    }
    if (vk === 'A_Indirection') {
      const cols = expandRowStar(env, vb, loc(vb));
      if (cols) {
        out.push(...cols);
        continue;
      }
    }
    const name = typeof rt.name === 'string' ? str(rt.name) : figureColname(val);
    const plain = plainReference(env, val);
    if (plain) {
      out.push({ name, lineage: plain, location: loc(vb) >= 0 ? loc(vb) : location });
      continue;
    }
    const { uses, volatile } = env.state.collect(() =>
      walkExpr(env, val, { kind: 'compute', context: 'select list expression' }),
    );
    // Recorded now in every case: a materialized CTE, a recursive one, a data-modifying one and
    // a subquery Postgres does not flatten evaluate their whole target list, referenced or not,
    // and an error there (1/0, a failing cast) answers a question about the value.
    env.state.sink.push(...uses);
    out.push({
      name,
      lineage: {
        sources: [],
        deferred: volatile ? [] : uses,
        rows: [],
        origin: noOpCastOrigin(env, val) ?? NO_ORIGIN,
        requires: null,
      },
      location,
    });
  }
  return out;
}

/** Throws 42601 unless `n` columns were given where `expected` are required. */
export function checkArity(n: number, expected: number, what: string, location: number): void {
  if (n !== expected)
    throw new QueryRefusal('42601', `each ${what} query must have the same number of columns`, location);
}

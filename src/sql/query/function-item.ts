// Functions in FROM (plain, WITH ORDINALITY, ROWS FROM, column definition lists) and XMLTABLE.
import { resolveFunction } from './catalog-names.js';
import { QueryRefusal, unsupported } from './errors.js';
import { type Env, walkExpr, walkList } from './expression.js';
import { figureColname } from './figure-colname.js';
import { functionShape } from './function-result.js';
import { UNTRACEABLE } from './lineage.js';
import { list, loc, names, type Obj, obj, str, unwrap } from './node-kinds.js';
import { renameColumns } from './relation-item.js';
import type { FromItem, ItemColumn, Scope } from './scope.js';
import type { QueryState } from './state.js';

function untraceable(name: string): ItemColumn {
  return { name, lineage: UNTRACEABLE };
}

function defListNames(defs: readonly unknown[]): string[] {
  return defs.map((d) => {
    const [k, b] = unwrap(d);
    if (k !== 'ColumnDef') unsupported(`a ${k} in a column definition list`, loc(b));
    return str(b.colname);
  });
}

/** The column definition list of one ROWS FROM entry (`f() AS (a int)`): the entry's second item. */
function entryDefList(defs: unknown): unknown[] {
  const o = obj(defs);
  return o && 'List' in o ? list(obj(o.List)?.items) : [];
}

/** One function of a FROM item after Postgres's unnest expansion: its call and its column definition list. */
interface FunctionEntry {
  readonly call: unknown;
  readonly defs: readonly unknown[];
}

/**
 * `unnest(a, b, …)` written without schema, decoration or column definition list stands for
 * `ROWS FROM (unnest(a), unnest(b), …)`: one column per argument (transformRangeFunction).
 */
function isMultiUnnest(call: unknown): boolean {
  const [k, b] = unwrap(call);
  if (k !== 'FuncCall') return false;
  const fname = names(b.funcname);
  return (
    fname.length === 1 &&
    fname[0] === 'unnest' &&
    list(b.args).length > 1 &&
    !b.agg_order &&
    !b.agg_filter &&
    !b.over &&
    !b.agg_star &&
    !b.agg_distinct &&
    !b.func_variadic
  );
}

/**
 * The functions of a RangeFunction as Postgres 15 sees them: each ROWS FROM entry (or the lone
 * function) with its column definition list, a multi-argument `unnest` split into one `unnest`
 * per argument. Throws 42601 for a column definition list over several functions (as Postgres).
 */
function functionEntries(body: Obj): FunctionEntry[] {
  const rowsFrom = body.is_rowsfrom === true;
  const out: FunctionEntry[] = [];
  for (const e of list(body.functions)) {
    const [, eb] = unwrap(e);
    const [call, defs] = list(eb.items);
    const own = entryDefList(defs);
    if (own.length === 0 && isMultiUnnest(call)) {
      const [, fb] = unwrap(call);
      for (const arg of list(fb.args)) {
        out.push({
          call: { FuncCall: { ...fb, funcname: [{ String: { sval: 'unnest' } }], args: [arg] } },
          defs: [],
        });
      }
      continue;
    }
    out.push({ call, defs: own });
  }
  const outer = list(body.coldeflist);
  if (outer.length > 0) {
    if (out.length !== 1) {
      throw new QueryRefusal(
        '42601',
        rowsFrom
          ? 'ROWS FROM() with multiple functions cannot have a column definition list'
          : 'UNNEST() with multiple arguments cannot have a column definition list',
        loc(obj(obj(outer[0])?.ColumnDef) ?? {}),
      );
    }
    out[0] = { call: out[0]?.call, defs: outer };
  }
  return out;
}

/**
 * A function in FROM. Its arguments are `compute` uses (DESIGN.md: an argument of a function in
 * FROM), analyzed LATERAL over the earlier FROM items; its output columns are untraceable (origin
 * 0). Columns, per function after the unnest expansion (Postgres 15 addRangeTableEntryForFunction):
 * the names of its column definition list (only for a function returning `record`); its OUT,
 * INOUT or TABLE parameters, or the attributes of the composite type it returns; else one column
 * for a scalar function, named after its single named OUT parameter, else after the FROM alias
 * when it is the only function, else after the function (chooseScalarFunctionAlias); then
 * `ordinality`. A function whose columns the catalog does not fix (see function-result.ts) is
 * `open`: any name resolves to a column of it (see column-ref.ts), and `*` over it is refused.
 * Throws 42601 for a column definition list over several functions, over a function not
 * returning `record`, or missing for one returning `record`; 42P10 for too many aliases.
 */
export function functionItem(state: QueryState, scope: Scope, body: Obj): FromItem {
  const env: Env = { state, scope };
  const alias = obj(body.alias);
  // Arguments are walked as written (the unnest split only changes the shape of the result).
  for (const e of list(body.functions)) {
    const [, eb] = unwrap(e);
    walkExpr(env, list(eb.items)[0], { kind: 'compute', context: 'function in FROM' });
  }
  const entries = functionEntries(body);
  const cols: ItemColumn[] = [];
  let open = false;
  let firstName = '';
  for (const { call, defs } of entries) {
    const [fk, fb] = unwrap(call);
    const fname = fk === 'FuncCall' ? names(fb.funcname) : [];
    const colName = fname[fname.length - 1] ?? figureColname(call);
    firstName ||= colName;
    const shape =
      fk === 'FuncCall'
        ? functionShape(
            state.catalog,
            state.path,
            scope,
            resolveFunction(state.catalog.functions, state.path, fname, list(fb.args).length, loc(fb)),
            fb,
          )
        : ({ kind: 'scalar', name: null, polymorphic: true } as const);
    if (defs.length > 0) {
      const where = loc(obj(obj(defs[0])?.ColumnDef) ?? {});
      if (shape.kind === 'columns')
        throw new QueryRefusal(
          '42601',
          shape.from === 'out'
            ? 'a column definition list is redundant for a function with OUT parameters'
            : 'a column definition list is redundant for a function returning a named composite type',
          where,
        );
      if (shape.kind === 'scalar' && !shape.polymorphic)
        throw new QueryRefusal(
          '42601',
          'a column definition list is only allowed for functions returning "record"',
          where,
        );
      for (const n of defListNames(defs)) cols.push(untraceable(n));
      continue;
    }
    if (shape.kind === 'record')
      throw new QueryRefusal(
        '42601',
        'a column definition list is required for functions returning "record"',
        loc(fb),
      );
    if (shape.kind === 'open') {
      open = true;
      continue;
    }
    if (shape.kind === 'columns') {
      for (const n of shape.names) cols.push(untraceable(n));
      continue;
    }
    cols.push(untraceable(shape.name ?? (entries.length === 1 && alias ? str(alias.aliasname) : colName)));
  }
  if (body.ordinality === true) cols.push(untraceable('ordinality'));
  const refname = alias ? str(alias.aliasname) : firstName;
  return {
    refname,
    schema: null,
    columns: open ? cols : renameColumns(cols, alias, refname, -1),
    base: null,
    relation: null,
    open,
    location: -1,
  };
}

/** XMLTABLE(…): its document, row and column expressions are compute uses; its columns untraceable. */
export function tableFuncItem(state: QueryState, scope: Scope, body: Obj): FromItem {
  const env: Env = { state, scope };
  const mode = { kind: 'compute', context: 'XMLTABLE' } as const;
  walkExpr(env, body.docexpr, mode);
  walkExpr(env, body.rowexpr, mode);
  for (const n of list(body.namespaces)) {
    const [, nb] = unwrap(n);
    walkExpr(env, nb.val, mode);
  }
  const cols: ItemColumn[] = [];
  for (const c of list(body.columns)) {
    const [k, cb] = unwrap(c);
    if (k !== 'RangeTableFuncCol') unsupported(`a ${k} in XMLTABLE`, loc(cb));
    walkExpr(env, cb.colexpr, mode);
    walkExpr(env, cb.coldefexpr, mode);
    cols.push(untraceable(str(cb.colname)));
  }
  walkList(env, [], mode);
  const alias = obj(body.alias);
  const refname = alias ? str(alias.aliasname) : 'xmltable';
  return {
    refname,
    schema: null,
    columns: renameColumns(cols, alias, refname, loc(body)),
    base: null,
    relation: null,
    open: false,
    location: loc(body),
  };
}

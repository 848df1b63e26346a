// Functions in FROM (plain, WITH ORDINALITY, ROWS FROM, column definition lists) and XMLTABLE.
import { resolveFunction } from './catalog-names.js';
import { unsupported } from './errors.js';
import { type Env, walkExpr, walkList } from './expression.js';
import { figureColname } from './figure-colname.js';
import { UNTRACEABLE } from './lineage.js';
import { list, loc, names, type Obj, obj, str, unwrap } from './node-kinds.js';
import { renameColumns } from './relation-item.js';
import type { FromItem, ItemColumn, Scope } from './scope.js';
import type { QueryState } from './state.js';

/** The `record` pseudo-type: the function's columns come from OUT parameters the catalog does not hold. */
const RECORD_OID = 2249;
/** OIDs from here on are user-defined (possibly composite) types. */
const FIRST_USER_OID = 16384;

function untraceable(name: string): ItemColumn {
  return { name, lineage: UNTRACEABLE };
}

function defListNames(defs: unknown): string[] {
  return list(defs).map((d) => {
    const [k, b] = unwrap(d);
    if (k !== 'ColumnDef') unsupported(`a ${k} in a column definition list`, loc(b));
    return str(b.colname);
  });
}

/**
 * A function in FROM. Its arguments are `compute` uses (DESIGN.md: an argument of a function in
 * FROM), analyzed LATERAL over the earlier FROM items; its output columns are untraceable. Names:
 * a column definition list, else one column per scalar function (named after the alias for a
 * lone function, after the function in ROWS FROM), plus `ordinality`. A function returning
 * `record` or a user type without a definition list is `open`: its column names are not in the
 * catalog (see column-ref.ts).
 */
export function functionItem(state: QueryState, scope: Scope, body: Obj): FromItem {
  const env: Env = { state, scope };
  const alias = obj(body.alias);
  const entries = list(body.functions);
  const rowsFrom = body.is_rowsfrom === true;
  const cols: ItemColumn[] = [];
  let open = false;
  let firstName = '';
  for (const e of entries) {
    const [, eb] = unwrap(e);
    const [fnNode, defs] = list(eb.items);
    walkExpr(env, fnNode, { kind: 'compute', context: 'function in FROM' });
    const [fk, fb] = unwrap(fnNode);
    const fname = fk === 'FuncCall' ? names(fb.funcname) : [];
    const colName = fname[fname.length - 1] ?? figureColname(fnNode);
    firstName ||= colName;
    const defList = obj(defs) ? list(defs) : list(body.coldeflist);
    if (defList.length > 0) {
      for (const n of defListNames(defList)) cols.push(untraceable(n));
      continue;
    }
    if (fk === 'FuncCall') {
      const fn = resolveFunction(state.catalog.functions, state.path, fname, list(fb.args).length, loc(fb));
      if (fn.returnType === RECORD_OID || fn.returnType >= FIRST_USER_OID) {
        open = true;
        continue;
      }
    }
    cols.push(untraceable(!rowsFrom && entries.length === 1 && alias ? str(alias.aliasname) : colName));
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

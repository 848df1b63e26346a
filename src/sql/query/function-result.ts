// The columns a function yields in FROM, as Postgres 15's get_expr_result_type decides them for the overload a call picks.
import type { Catalog, CatalogFunction, CatalogType } from '../../catalog/types.js';
import { effectivePath } from './catalog-names.js';
import { resolveColumnRef } from './column-ref.js';
import { list, loc, names, type Obj, obj, unwrap } from './node-kinds.js';
import type { Scope } from './scope.js';

/** The `record` pseudo-type: the columns come from a column definition list. */
const RECORD_OID = 2249;
/** OIDs from here on are user-defined types (a domain over a composite type the catalog does not describe). */
const FIRST_USER_OID = 16384;
/** Polymorphic result types that may resolve to a composite type (anyelement, anynonarray, anycompatible, anycompatiblenonarray). */
const POLYMORPHIC_ELEMENT = new Set([2283, 2776, 5077, 5079]);
/** Polymorphic parameter types an array argument fits (anyarray, anycompatiblearray). */
const POLYMORPHIC_ARRAY = new Set([2277, 5078]);
/** Polymorphic parameter types any argument fits ("any", anyelement, anycompatible). */
const POLYMORPHIC_ANY = new Set([2276, 2283, 5077]);
/** Polymorphic parameter types a non-array argument fits (anynonarray, anycompatiblenonarray). */
const POLYMORPHIC_NONARRAY = new Set([2776, 5079]);

/** Polymorphic parameter types a multirange fits (anymultirange, anycompatiblemultirange). */
const POLYMORPHIC_MULTIRANGE = new Set([4537, 4538]);
/** Polymorphic parameter types a range fits (anyrange, anycompatiblerange). */
const POLYMORPHIC_RANGE = new Set([3831, 5080]);

/** Literal types by A_Const value field (Postgres make_const: integer, numeric, boolean, bit string). */
const CONST_TYPES: Readonly<Record<string, number>> = { ival: 23, fval: 1700, boolval: 16, bsval: 1560 };

/**
 * What a function yields in FROM:
 * - `columns`: a composite result (several OUT parameters, or a named composite return type:
 *   `from`), these names;
 * - `scalar`: one column, named `name` (a single named OUT parameter) or else after the alias or
 *   the function (chooseScalarFunctionAlias); `polymorphic` when the result type follows the
 *   arguments (it could be a record or composite Postgres resolves at parse time);
 * - `record`: `record` without OUT parameters, a column definition list is required;
 * - `open`: not known from the catalog (the columns are refused under `*`, see column-ref.ts).
 */
export type FunctionShape =
  | { readonly kind: 'columns'; readonly names: readonly string[]; readonly from: 'out' | 'composite' }
  | { readonly kind: 'scalar'; readonly name: string | null; readonly polymorphic: boolean }
  | { readonly kind: 'record' }
  | { readonly kind: 'open' };

const OPEN: FunctionShape = { kind: 'open' };
/** An array of a type the analysis does not know: it fits only polymorphic array parameters. */
const SOME_ARRAY: CatalogType = { oid: -1, schema: '', name: '_', why: null };

const typesByOid = new WeakMap<Catalog, Map<number, CatalogType>>();

function typeByOid(catalog: Catalog, oid: number): CatalogType | undefined {
  let m = typesByOid.get(catalog);
  if (!m) {
    m = new Map([...(catalog.types?.values() ?? [])].map((t) => [t.oid, t]));
    typesByOid.set(catalog, m);
  }
  return m.get(oid);
}

function typeNamed(
  catalog: Catalog,
  path: readonly string[],
  parts: readonly string[],
): CatalogType | undefined {
  const name = parts[parts.length - 1] ?? '';
  if (parts.length >= 2) return catalog.types?.get(`${parts[parts.length - 2]}.${name}`);
  for (const s of effectivePath(path)) {
    const t = catalog.types?.get(`${s}.${name}`);
    if (t) return t;
  }
  return undefined;
}

function arrayOf(catalog: Catalog, t: CatalogType | undefined): CatalogType | undefined {
  return t ? catalog.types?.get(`${t.schema}._${t.name}`) : undefined;
}

/** int2vector and oidvector: arrays to the type resolver (typcategory A), though not named `_…` (pg_index.indkey, pg_proc.proargtypes). */
const VECTOR_TYPES = new Set([22, 30]);

function isArrayType(t: CatalogType | undefined): boolean {
  return !!t && (t.name.startsWith('_') || VECTOR_TYPES.has(t.oid));
}

/**
 * The type an argument expression has when it is plain to see: a literal (not a quoted string,
 * whose type is unknown), a cast, an ARRAY[...] of one type, a base column. Else undefined.
 */
function argType(
  catalog: Catalog,
  path: readonly string[],
  scope: Scope,
  expr: unknown,
): CatalogType | undefined {
  const [k, b] = unwrap(expr);
  if (k === 'A_Const') {
    const field = Object.keys(CONST_TYPES).find((f) => f in b);
    return field ? typeByOid(catalog, CONST_TYPES[field] as number) : undefined;
  }
  if (k === 'TypeCast') {
    const tn = obj(b.typeName);
    if (!tn) return undefined;
    let t = typeNamed(catalog, path, names(tn.names));
    for (const _ of list(tn.arrayBounds)) t = arrayOf(catalog, t);
    return t;
  }
  if (k === 'A_ArrayExpr') {
    const elems = list(b.elements).map((e) => argType(catalog, path, scope, e));
    const first = elems[0];
    const same = first && elems.every((e) => e?.oid === first.oid) ? arrayOf(catalog, first) : undefined;
    // ARRAY['a', 'b'] is text[] (unknown literals resolve to text); any ARRAY[…] is some array.
    const quoted = list(b.elements).every((e) => {
      const [ek, eb] = unwrap(e);
      return ek === 'A_Const' && 'sval' in eb;
    });
    return same ?? (quoted ? catalog.types?.get('pg_catalog._text') : undefined) ?? SOME_ARRAY;
  }
  if (k === 'FuncCall') return callResultType(catalog, path, b);
  if (k === 'ColumnRef') {
    try {
      const r = resolveColumnRef(scope, b, loc(b));
      const src =
        r.kind === 'column' && r.column.lineage.sources.length === 1 ? r.column.lineage.sources[0] : null;
      const col =
        src &&
        catalog.relations.get(`${src.schema}.${src.table}`)?.columns.find((c) => c.name === src.column);
      return col ? typeByOid(catalog, col.typeOid) : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Pseudo-types a result type may be that depend on the arguments (any…, record, void and the like: below 16384, typtype p). */
const PSEUDO_RESULTS = new Set([2249, 2276, 2277, 2283, 2776, 3831, 4537, 4538, 5077, 5078, 5079, 5080]);

/**
 * The result type of a nested call when every overload of its name (by the search path, pg_catalog
 * first) taking as many arguments returns the same non-polymorphic type: `current_schemas(true)` is
 * `name[]`. Else undefined (the analysis does not guess which overload Postgres picks).
 */
function callResultType(catalog: Catalog, path: readonly string[], call: Obj): CatalogType | undefined {
  const parts = names(call.funcname);
  const name = parts[parts.length - 1] ?? '';
  const schemas = parts.length >= 2 ? [parts[parts.length - 2] as string] : effectivePath(path);
  for (const s of schemas) {
    const overloads = catalog.functions.get(`${s}.${name}`);
    if (!overloads) continue;
    const same = overloads.filter((f) => f.argTypes.length === list(call.args).length);
    const r = same[0]?.returnType;
    if (r === undefined || PSEUDO_RESULTS.has(r) || same.some((f) => f.returnType !== r)) return undefined;
    return typeByOid(catalog, r);
  }
  return undefined;
}

/** How well an argument of type `t` fits parameter type `p`: 2 exactly, 1 through a polymorphic parameter, 0 otherwise. */
function fit(t: CatalogType, p: number): number {
  if (t.oid === p) return 2;
  if (POLYMORPHIC_ANY.has(p)) return 1;
  if (POLYMORPHIC_ARRAY.has(p)) return isArrayType(t) ? 1 : 0;
  if (POLYMORPHIC_NONARRAY.has(p)) return isArrayType(t) ? 0 : 1;
  // Built-in range and multirange types are named so (int4range, int4multirange).
  if (POLYMORPHIC_MULTIRANGE.has(p)) return t.name.endsWith('multirange') ? 1 : 0;
  if (POLYMORPHIC_RANGE.has(p)) return t.name.endsWith('range') && !t.name.endsWith('multirange') ? 1 : 0;
  return 0;
}

function shapeOf(catalog: Catalog, fn: CatalogFunction, composite: string | null): FunctionShape {
  const cols = fn.resultColumns;
  if (cols && fn.fromOutParameters && cols.length === 1)
    return { kind: 'scalar', name: cols[0]?.name || null, polymorphic: false };
  if (cols)
    return {
      kind: 'columns',
      names: cols.map((c, i) => c.name || `column${i + 1}`),
      from: fn.fromOutParameters ? 'out' : 'composite',
    };
  if (fn.returnType === RECORD_OID) return { kind: 'record' };
  if (POLYMORPHIC_ELEMENT.has(fn.returnType)) {
    // jsonb_populate_record(null::users, …): the row type of a relation the catalog holds.
    if (composite) {
      const rel = catalog.relations.get(composite);
      return rel ? { kind: 'columns', names: rel.columns.map((c) => c.name), from: 'composite' } : OPEN;
    }
    return { kind: 'scalar', name: null, polymorphic: true };
  }
  if (fn.returnType >= FIRST_USER_OID) return OPEN;
  return { kind: 'scalar', name: null, polymorphic: false };
}

function sameShape(a: FunctionShape, b: FunctionShape): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The shape of `call` (a FuncCall body) to function `fn` as resolved by name: among the overloads
 * of its schema and name taking as many arguments, those fitting the argument types that are
 * plain to see best; when they still disagree on the shape, `open` (fail closed: the analysis
 * does not guess which overload Postgres picks). A polymorphic result is a relation's row type
 * when its first argument is a cast to one (`null::users`).
 */
export function functionShape(
  catalog: Catalog,
  path: readonly string[],
  scope: Scope,
  fn: CatalogFunction,
  call: Obj,
): FunctionShape {
  const args = list(call.args);
  const types = args.map((a) => argType(catalog, path, scope, a));
  const overloads = (catalog.functions.get(`${fn.schema}.${fn.name}`) ?? [fn]).filter(
    (f) => f.argTypes.length === fn.argTypes.length,
  );
  const score = (f: CatalogFunction): number =>
    types.reduce(
      (s, t, i) => s + (t && f.argTypes[i] !== undefined ? fit(t, f.argTypes[i] as number) : 0),
      0,
    );
  const best = Math.max(...overloads.map(score));
  const picked = overloads.filter((f) => score(f) === best);
  const first = types[0];
  const composite =
    first && catalog.relations.has(`${first.schema}.${first.name}`) ? `${first.schema}.${first.name}` : null;
  const shapes = picked.map((f) => shapeOf(catalog, f, composite));
  const s = shapes[0] ?? OPEN;
  return shapes.every((x) => sameShape(x, s)) ? s : OPEN;
}

/** format_type_be's names of the pg_catalog types whose SQL name is not their pg_type name. */
const SQL_TYPE_NAMES: Readonly<Record<string, string>> = {
  int2: 'smallint',
  int4: 'integer',
  int8: 'bigint',
  float4: 'real',
  float8: 'double precision',
  bool: 'boolean',
  varchar: 'character varying',
  bpchar: 'character',
  char: '"char"',
  timestamp: 'timestamp without time zone',
  timestamptz: 'timestamp with time zone',
  time: 'time without time zone',
  timetz: 'time with time zone',
  varbit: 'bit varying',
};

/** A pg_catalog type as format_type_be prints it (arrays with `[]`); null for another schema's (it may be qualified). */
function sqlTypeName(t: CatalogType): string | null {
  if (t.schema !== 'pg_catalog' || t.oid < 0) return null;
  if (t.name.startsWith('_')) {
    const base = t.name.slice(1);
    return `${SQL_TYPE_NAMES[base] ?? base}[]`;
  }
  return SQL_TYPE_NAMES[t.name] ?? t.name;
}

/**
 * The argument types of `call` (a FuncCall body) as Postgres names them in "function f(integer,
 * unknown) does not exist" (func_signature_string: a quoted literal or NULL is `unknown`), or
 * null when one of them is not plain to see from the text and the catalog (the message then
 * names the function alone).
 */
export function callSignature(
  catalog: Catalog,
  path: readonly string[],
  scope: Scope,
  call: Obj,
): string | null {
  const out: string[] = [];
  for (const a of list(call.args)) {
    const [k, b] = unwrap(a);
    if (k === 'NamedArgExpr') return null;
    if (k === 'A_Const' && (b.isnull === true || 'sval' in b)) {
      out.push('unknown');
      continue;
    }
    // An integer too large for integer is bigint or numeric: not told apart here.
    if (k === 'A_Const' && 'fval' in b && /^[0-9]+$/.test(String(obj(b.fval)?.fval ?? ''))) return null;
    const t = argType(catalog, path, scope, a);
    const name = t ? sqlTypeName(t) : null;
    if (!name) return null;
    out.push(name);
  }
  return out.join(', ');
}

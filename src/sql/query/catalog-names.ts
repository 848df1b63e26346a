// Resolving relation and function names through the catalog, the search path and pg_catalog.
import type { Catalog, CatalogFunction, CatalogRelation } from '../../catalog/types.js';
import { QueryRefusal } from './errors.js';

/** Schemas whose relations are the system catalog (recorded in `catalogRelations`, never expanded). */
export const CATALOG_SCHEMAS: ReadonlySet<string> = new Set(['pg_catalog', 'information_schema']);

/**
 * The schemas an unqualified name is looked up in, in order: Postgres searches `pg_catalog`
 * first unless the search path lists it explicitly somewhere (then it is searched there).
 */
export function effectivePath(searchPath: readonly string[]): readonly string[] {
  return searchPath.includes('pg_catalog') ? searchPath : ['pg_catalog', ...searchPath];
}

/**
 * The search path a definition the catalog read printed (a view's pg_get_viewdef, a generation
 * expression's pg_get_expr) is resolved under: the one it was printed under, `pg_catalog, pg_temp`
 * (catalog-reads.ts READ_PATH), which qualifies every name it does not reach — pg_catalog, then
 * the reading session's temporary schema when the catalog was read on its own connection. Never
 * the login's path: one that lists a schema before pg_catalog would read a printed `pg_class` as
 * that schema's table of the name.
 */
export function definitionPath(catalog: Catalog): readonly string[] {
  const temp = (catalog as { tempSchema?: string }).tempSchema;
  return temp ? ['pg_catalog', temp] : ['pg_catalog'];
}

/**
 * The schema a written qualifier names: `pg_temp` is the session's own temporary schema
 * (`pg_temp_N`, which the proxy puts first on the path when the session has one; Postgres's
 * LookupExplicitNamespace), any other name itself.
 */
export function explicitSchema(schema: string, path: readonly string[]): string {
  if (schema !== 'pg_temp') return schema;
  return path.find((s) => /^pg_temp_\d+$/.test(s)) ?? schema;
}

/**
 * The relation `[schema.]name` denotes. Throws 42P01 (`relation "x" does not exist`) when none
 * does, 3F000 when a named schema does not exist; `location` is the reference's.
 */
export function resolveRelation(
  relations: ReadonlyMap<string, CatalogRelation>,
  _namespaces: ReadonlySet<string>,
  path: readonly string[],
  schema: string | null,
  name: string,
  location: number,
): CatalogRelation {
  if (schema !== null) {
    const r = relations.get(`${explicitSchema(schema, path)}.${name}`);
    if (r) return r;
    throw new QueryRefusal('42P01', `relation "${schema}.${name}" does not exist`, location);
  }
  for (const s of effectivePath(path)) {
    const r = relations.get(`${s}.${name}`);
    if (r) return r;
  }
  throw new QueryRefusal('42P01', `relation "${name}" does not exist`, location);
}

/**
 * The function `[schema.]name` called with `nargs` arguments: the first schema on the path
 * holding a function of that name, then the overload taking exactly `nargs` arguments, else one
 * taking more (defaults) or fewer (variadic). Throws 42883 when no function of that name exists.
 * Argument types are not matched: the policy needs the schema and name, and every overload of a
 * name shares them.
 */
export function resolveFunction(
  functions: ReadonlyMap<string, readonly CatalogFunction[]>,
  path: readonly string[],
  nameParts: readonly string[],
  nargs: number,
  location: number,
): CatalogFunction {
  const name = nameParts[nameParts.length - 1] ?? '';
  let candidates: readonly CatalogFunction[] | undefined;
  if (nameParts.length >= 2) {
    candidates = functions.get(`${explicitSchema(nameParts[nameParts.length - 2] ?? '', path)}.${name}`);
  } else {
    // Postgres weighs every candidate on the whole path by argument types, not the first schema
    // holding the name: a user function `length(integer)` later on the path wins over
    // pg_catalog.length(text) for an integer argument. Types are not matched here, so when a
    // function of this name exists outside pg_catalog anywhere on the path, that one is taken
    // (it needs MANAGE): fail closed rather than guess which overload Postgres calls.
    candidates = onPath(functions, path, name);
  }
  if (!candidates || candidates.length === 0) {
    throw new QueryRefusal('42883', `function ${nameParts.join('.')} does not exist`, location);
  }
  const exact = candidates.find((f) => f.argTypes.length === nargs);
  const more = candidates.find((f) => f.argTypes.length > nargs);
  const fewer = candidates.find((f) => f.argTypes.length < nargs);
  return (exact ?? more ?? fewer ?? candidates[0]) as CatalogFunction;
}

/**
 * The overloads of unqualified `name` resolveFunction takes: those outside pg_catalog on the
 * effective path, in path order, if any, else pg_catalog's. No array is built when one schema
 * holds the name (the common case: a built-in), the cold analysis's function lookups (issue 18).
 */
function onPath(
  functions: ReadonlyMap<string, readonly CatalogFunction[]>,
  path: readonly string[],
  name: string,
): readonly CatalogFunction[] {
  let single: readonly CatalogFunction[] | undefined;
  let lists: (readonly CatalogFunction[])[] | undefined;
  const visit = (schema: string): void => {
    const l = functions.get(`${schema}.${name}`);
    if (l === undefined || l.length === 0) return;
    if (single === undefined) single = l;
    else if (lists === undefined) lists = [single, l];
    else lists.push(l);
  };
  if (!path.includes('pg_catalog')) visit('pg_catalog');
  for (const s of path) visit(s);
  const all: readonly CatalogFunction[] = lists ? lists.flat() : (single ?? []);
  if (all.every((f) => f.schema === 'pg_catalog')) return all;
  return all.filter((f) => f.schema !== 'pg_catalog');
}

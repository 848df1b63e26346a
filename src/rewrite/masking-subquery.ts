// The masking subquery that stands in for a relation with hidden columns, and the mask constant.
import type { CatalogRelation } from '../catalog/types.js';
import { quoteIdent } from './sql-tokens.js';

/** The constant every hidden column reads as upstream (DESIGN.md "Three walls", wall 2). */
export const MASK_CONSTANT = "'*****'::text";

/** The value of {@link MASK_CONSTANT} as it arrives in a DataRow. */
export const MASK_VALUE = '*****';

/** System columns Postgres lets a query name on a table (they carry no row data of a column). */
export const SYSTEM_COLUMNS: ReadonlySet<string> = new Set([
  'ctid',
  'xmin',
  'xmax',
  'cmin',
  'cmax',
  'tableoid',
]);

/** `schema.name`, both quoted: a name Postgres binds without the search path. */
export function qualifiedName(schema: string, name: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(name)}`;
}

/**
 * The select list of the masking subquery of `rel`: every column in attnum order, visible ones
 * passed by name (so their type, value and RowDescription origin pass through: Postgres's
 * markTargetListOrigins follows a subquery's Vars to the base table), hidden ones as
 * `'*****'::text AS "name"`; then the `system` columns the statement names, in the order given,
 * after the user columns so an alias column list (`AS u(a, b)`) still renames the same columns.
 */
export function maskingSelectList(
  rel: CatalogRelation,
  hidden: ReadonlySet<string>,
  system: readonly string[],
): string {
  const cols = rel.columns.map((c) =>
    hidden.has(c.name) ? `${MASK_CONSTANT} AS ${quoteIdent(c.name)}` : quoteIdent(c.name),
  );
  for (const s of system) cols.push(quoteIdent(s));
  return cols.join(', ');
}

/**
 * The text that replaces a reference to `rel` in a FROM clause: `(SELECT <list> FROM [ONLY]
 * "schema"."name" AS "refname")` (`refname`: the reference's alias, or the relation's name), followed by ` AS "name"` when the reference had no alias (the reference's own
 * alias and column alias list, when it had them, stay in the text after it). Postgres then
 * computes every predicate, join, group, window and whole-row value over the mask constant.
 */
export function maskingSubquery(
  rel: CatalogRelation,
  hidden: ReadonlySet<string>,
  opts: {
    readonly only: boolean;
    readonly aliased: boolean;
    readonly refname: string;
    readonly system: readonly string[];
  },
): string {
  // The inner reference takes the outer one's name, so plans and messages name it as the caller did.
  const from = `${opts.only ? 'ONLY ' : ''}${qualifiedName(rel.schema, rel.name)} AS ${quoteIdent(opts.refname)}`;
  const sub = `(SELECT ${maskingSelectList(rel, hidden, opts.system)} FROM ${from})`;
  return opts.aliased ? sub : `${sub} AS ${quoteIdent(opts.refname)}`;
}

// FROM items for named relations: tables, catalog relations, views, CTE references.
import type { CatalogRelation } from '../../catalog/types.js';
import { CATALOG_SCHEMAS, resolveRelation } from './catalog-names.js';
import { QueryRefusal, unsupported } from './errors.js';
import { baseLineage, passUp } from './lineage.js';
import { loc, names, type Obj, obj, str } from './node-kinds.js';
import { type FromItem, findCte, type ItemColumn, type Scope } from './scope.js';
import type { QueryState } from './state.js';
import { expandView } from './views.js';

/** Applies an alias column list (`AS t(a, b)`) to the first columns. Throws 42P10 when it names too many. */
export function renameColumns(
  cols: readonly ItemColumn[],
  alias: Obj | undefined,
  refname: string,
  location: number,
): ItemColumn[] {
  const colnames = alias ? names(alias.colnames) : [];
  if (colnames.length > cols.length) {
    throw new QueryRefusal(
      '42P10',
      `table "${refname}" has ${cols.length} columns available but ${colnames.length} columns specified`,
      location,
    );
  }
  return cols.map((c, i) => (i < colnames.length ? { name: colnames[i] as string, lineage: c.lineage } : c));
}

/** The catalog relation a RangeVar names (search path, pg_catalog first). Throws 42P01 / 3F000 / 0A000. */
export function relationOf(state: QueryState, rv: Obj): CatalogRelation {
  if (typeof rv.catalogname === 'string' && rv.catalogname) {
    unsupported('a cross-database reference', loc(rv));
  }
  const schema = typeof rv.schemaname === 'string' && rv.schemaname ? rv.schemaname : null;
  return resolveRelation(
    state.catalog.relations,
    state.catalog.namespaces,
    state.path,
    schema,
    str(rv.relname),
    loc(rv),
  );
}

/** A FROM item reading `rel`'s stored rows: each column's lineage is the column itself. */
export function storedItem(rel: CatalogRelation, rv: Obj): FromItem {
  const alias = obj(rv.alias);
  const refname = alias ? str(alias.aliasname) : rel.name;
  const cols: ItemColumn[] = rel.columns.map((c) => ({
    name: c.name,
    lineage: baseLineage({
      schema: rel.schema,
      table: rel.name,
      column: c.name,
      tableOid: rel.oid,
      attnum: c.attnum,
      generatedFrom: c.generatedFrom,
    }),
  }));
  return {
    refname,
    schema: alias ? null : rel.schema,
    columns: renameColumns(cols, alias, refname, loc(rv)),
    base: rel,
    relation: rel,
    open: false,
    location: loc(rv),
  };
}

/**
 * The FROM item a RangeVar in a FROM clause names: a CTE visible from `scope` (a CTE shadows a
 * table, unqualified names only), else a catalog relation. Adds SELECT on the relation (every
 * table named counts, seed 004 "Allow and deny"); records pg_catalog / information_schema
 * relations in `catalogRelations` (never expanded: they are allowlisted as a whole); expands a
 * view through its definition.
 */
export function rangeVarItem(state: QueryState, scope: Scope, rv: Obj): FromItem {
  const alias = obj(rv.alias);
  const relname = str(rv.relname);
  if (!rv.schemaname) {
    const cte = findCte(scope, relname);
    if (cte?.pending) throw new QueryRefusal('42P19', cte.pending, loc(rv));
    if (cte) {
      state.bind({ kind: 'cte', location: loc(rv), definition: cte.location ?? -1 });
      const refname = alias ? str(alias.aliasname) : relname;
      const cols = cte.columns.map((c) => ({ name: c.name, lineage: passUp(c.lineage) }));
      return {
        refname,
        schema: null,
        columns: renameColumns(cols, alias, refname, loc(rv)),
        base: null,
        relation: null,
        open: false,
        location: loc(rv),
      };
    }
  }
  const rel = relationOf(state, rv);
  state.bind({
    kind: 'relation',
    location: loc(rv),
    schema: rel.schema,
    name: rel.name,
    oid: rel.oid,
    target: false,
  });
  state.requireTable('SELECT', rel.schema, rel.name, 'read in FROM', loc(rv));
  if (CATALOG_SCHEMAS.has(rel.schema)) {
    state.catalogRelations.add(`${rel.schema}.${rel.name}`);
    return storedItem(rel, rv);
  }
  if (rel.kind === 'view') return expandView(state, rel, rv);
  return storedItem(rel, rv);
}

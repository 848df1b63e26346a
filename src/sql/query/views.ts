// Views: expanded through their stored definition, parsed once per catalog value and view.
import { parseSync } from 'libpg-query';
import type { Catalog, CatalogRelation } from '../../catalog/types.js';
import { definitionPath } from './catalog-names.js';
import { QueryRefusal, unsupported } from './errors.js';
import type { Lineage } from './lineage.js';
import { list, loc, type Obj, obj, str, unwrap } from './node-kinds.js';
import { renameColumns } from './relation-item.js';
import type { FromItem, ItemColumn } from './scope.js';
import { analyzeSelect } from './select.js';
import type { QueryState } from './state.js';

const parsed = new WeakMap<Catalog, Map<number, Obj>>();

/** The SelectStmt body of a view's definition, parsed once per (catalog value, view OID). */
function viewQuery(catalog: Catalog, rel: CatalogRelation, location: number): Obj {
  let perCatalog = parsed.get(catalog);
  if (!perCatalog) {
    perCatalog = new Map();
    parsed.set(catalog, perCatalog);
  }
  const hit = perCatalog.get(rel.oid);
  if (hit) return hit;
  if (!rel.viewDefinition) unsupported(`view ${rel.schema}.${rel.name} without a definition`, location);
  const tree = parseSync(rel.viewDefinition) as { stmts?: { stmt?: unknown }[] };
  const stmt = list(tree.stmts)[0] as { stmt?: unknown } | undefined;
  const [k, body] = unwrap(stmt?.stmt, location);
  if (k !== 'SelectStmt') unsupported(`view ${rel.schema}.${rel.name} defined by a ${k}`, location);
  perCatalog.set(rel.oid, body);
  return body;
}

/**
 * The FROM item for a view (seed 004: a column hidden at the bottom stays hidden when something
 * hands it up). Decision: the caller needs SELECT on the view and on the view columns it
 * references, not on the tables the view reads (Postgres checks those against the view owner);
 * but every column use inside the view's definition is recorded on the underlying base columns,
 * so SEE on a base column governs it through the view, and every function and catalog relation
 * the view calls or reads is recorded too. Locations inside the definition are reported as the
 * view reference's. A view column's RowDescription origin is the view's OID and attnum.
 * Names in the definition resolve under the path it was printed under (definitionPath:
 * pg_get_viewdef qualifies what that path does not reach). Throws 0A000 when the definition does not match
 * the view's columns.
 */
export function expandView(state: QueryState, rel: CatalogRelation, rv: Obj): FromItem {
  const location = loc(rv);
  const body = viewQuery(state.catalog, rel, location);
  const saved = { path: state.path, override: state.locationOverride, suppress: state.suppressRequirements };
  state.path = definitionPath(state.catalog);
  state.locationOverride ??= location;
  state.suppressRequirements = true;
  let out: ReturnType<typeof analyzeSelect>;
  try {
    out = analyzeSelect(state, body, null);
  } finally {
    state.path = saved.path;
    state.locationOverride = saved.override;
    state.suppressRequirements = saved.suppress;
  }
  if (out.length !== rel.columns.length) {
    throw new QueryRefusal(
      '0A000',
      `view ${rel.schema}.${rel.name} has changed since the catalog was read`,
      location,
    );
  }
  const cols: ItemColumn[] = rel.columns.map((c, i) => {
    const inner = (out[i] as (typeof out)[number]).lineage;
    const lineage: Lineage = {
      sources: inner.sources,
      deferred: inner.deferred,
      rows: inner.rows,
      origin: { tableOid: rel.oid, attnum: c.attnum },
      requires: { schema: rel.schema, table: rel.name, column: c.name },
    };
    return { name: c.name, lineage };
  });
  const alias = obj(rv.alias);
  const refname = alias ? str(alias.aliasname) : rel.name;
  return {
    refname,
    schema: alias ? null : rel.schema,
    columns: renameColumns(cols, alias, refname, location),
    base: null,
    relation: rel,
    open: false,
    location,
  };
}

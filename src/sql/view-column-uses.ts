// What each column of a view or materialized view reads, traced through its stored definition.
import type { Catalog, CatalogRelation } from '../catalog/types.js';
import type { ColumnUse } from './analysis-types.js';
import { analyze } from './analyze.js';
import { definitionPath } from './query/catalog-names.js';

const memo = new WeakMap<Catalog, Map<number, readonly (readonly ColumnUse[])[] | null>>();

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * For a view or materialized view, the column uses each of its columns makes, one list per
 * column in attnum order: the base columns that flow into it (plainly or through an expression),
 * the view's own tests (WHERE, JOIN, GROUP BY: they shape every column's rows) and whole-row uses.
 * Found by analyzing `SELECT "c" FROM (<definition>) AS v(<columns>)` under the path the
 * definition was printed under (definitionPath), memoized per catalog value.
 * Output: null when the relation is no view, has no definition, or its definition cannot be
 * analyzed (the caller fails closed: every column counts as hidden). Never throws.
 * Source: issue "Mask at read" ("materialized views traced through their definition as views are";
 * "a view column whose lineage reaches a hidden column, even through an expression, is hidden").
 */
export function viewColumnUses(
  catalog: Catalog,
  rel: CatalogRelation,
): readonly (readonly ColumnUse[])[] | null {
  if ((rel.kind !== 'view' && rel.kind !== 'matview') || !rel.viewDefinition) return null;
  let per = memo.get(catalog);
  if (!per) {
    per = new Map();
    memo.set(catalog, per);
  }
  if (per.has(rel.oid)) return per.get(rel.oid) ?? null;
  per.set(rel.oid, null); // a definition that reaches itself is refused, not looped on
  const def = rel.viewDefinition.trim().replace(/;\s*$/, '');
  const aliases = rel.columns.map((c) => quote(c.name)).join(', ');
  const out: ColumnUse[][] = [];
  for (const c of rel.columns) {
    const a = analyze(`SELECT ${quote(c.name)} FROM (${def}) AS pgwarden_view(${aliases})`, {
      catalog,
      searchPath: definitionPath(catalog),
    });
    const st = a.statements[0];
    if (a.refusal || !st) {
      per.set(rel.oid, null);
      return null;
    }
    out.push([...st.uses]);
  }
  per.set(rel.oid, out);
  return out;
}

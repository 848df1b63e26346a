// Fields of whole-row values: `(x).f` and `(x).*` over a FROM item's row or a column carrying rows of several items.

import type { Resolved } from './column-ref.js';
import { QueryRefusal, unsupported } from './errors.js';
import { computedFrom, type Lineage, mergeLineages, NO_ORIGIN, passUp, requireSelect } from './lineage.js';
import type { FromItem, ItemColumn } from './scope.js';
import type { QueryState } from './state.js';

/**
 * The FROM items whose whole rows a resolved reference holds: `[u]` for the row `u`, the items a
 * column carries (one per merged branch: UNION ALL, VALUES rows, recursive terms), else none.
 */
export function rowItems(r: Resolved): readonly FromItem[] {
  if (r.kind === 'row') return [r.item];
  if (r.kind === 'column') return r.column.lineage.rows;
  return [];
}

/** The column `field` of `item`; 42703 as Postgres words it for a field a row type lacks. */
function fieldOf(item: FromItem, field: string, location: number): ItemColumn {
  const col = item.columns.find((c) => c.name === field);
  if (!col) throw new QueryRefusal('42703', `column "${field}" not found in data type`, location);
  return col;
}

/**
 * The lineage of `(x).field` where `x` resolved to `r` and holds rows of `items` (non-empty):
 * the field's lineage in every item merged (each item's SELECT requirement recorded), plus, for a
 * column that also carries computed values (a branch `ROW(…)::users`, `NULL::users`), what those
 * are computed from. A field of a row in a column has no RowDescription origin (FieldSelect);
 * `(t).c` over a FROM item is the column itself. Throws 42703 when an item lacks the field.
 * Source: Postgres ParseComplexProjection (a field of a whole-row Var is that column's Var).
 */
export function rowFieldLineage(
  state: QueryState,
  r: Resolved,
  items: readonly FromItem[],
  field: string,
  location: number,
): Lineage {
  const cols = items.map((item) => fieldOf(item, field, location));
  const only = cols[0];
  if (r.kind === 'row' && only) {
    requireSelect(state, only.lineage, 'column reference', location);
    return only.lineage;
  }
  for (const c of cols) requireSelect(state, c.lineage, 'field of a row value', location);
  if (r.kind !== 'column') return unsupported('a field of a star', location);
  requireSelect(state, r.column.lineage, 'column reference', location);
  const parts = cols.map((c) => c.lineage);
  const carrier = r.column.lineage;
  if (carrier.sources.length > 0 || carrier.deferred.length > 0)
    parts.push(computedFrom(state, [{ ...carrier, rows: [] }], 'field selection', location));
  return mergeLineages(parts, NO_ORIGIN);
}

/**
 * The columns of `(x).*` where `x` holds rows of `items` (non-empty): position-wise merges of
 * the items' columns, which must agree in names (rows of one row type). Refused 0A000 when they
 * do not (pgwarden cannot tell which field names Postgres would use).
 */
export function rowStarColumns(items: readonly FromItem[], location: number): ItemColumn[] {
  const first = items[0];
  if (!first) return [];
  if (items.length === 1)
    return first.columns.map((c) => ({ name: c.name, lineage: passUp(c.lineage, NO_ORIGIN) }));
  for (const it of items) {
    if (
      it.columns.length !== first.columns.length ||
      it.columns.some((c, i) => c.name !== first.columns[i]?.name)
    )
      unsupported('(x).* over rows of different shapes merged into one column', location);
  }
  return first.columns.map((c, i) => ({
    name: c.name,
    lineage: mergeLineages(
      items.map((it) => (it.columns[i] as ItemColumn).lineage),
      NO_ORIGIN,
    ),
  }));
}

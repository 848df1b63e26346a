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
 * over a FROM item, `(t).c` is the column itself; over a column carrying rows, see fieldOfRows.
 * Throws 42703 when an item lacks the field.
 * Source: Postgres ParseComplexProjection (a field of a whole-row Var is that column's Var).
 */
export function rowFieldLineage(
  state: QueryState,
  r: Resolved,
  items: readonly FromItem[],
  field: string,
  location: number,
): Lineage {
  const only = items[0];
  if (r.kind === 'row' && only) {
    const col = fieldOf(only, field, location);
    requireSelect(state, col.lineage, 'column reference', location);
    return col.lineage;
  }
  if (r.kind !== 'column') return unsupported('a field of a star', location);
  requireSelect(state, r.column.lineage, 'column reference', location);
  return fieldOfRows(state, r.column.lineage, field, location);
}

/**
 * The lineage of field `field` of the rows a value with lineage `carrier` holds: the field's
 * lineage in every row merged (each one's SELECT requirement recorded: Postgres records a
 * FieldSelect's column), plus, for a value that also carries computed rows (a branch
 * `ROW(…)::users`), what those are computed from. No RowDescription origin (FieldSelect).
 * Throws 42703 when a row lacks the field.
 */
export function fieldOfRows(state: QueryState, carrier: Lineage, field: string, location: number): Lineage {
  const cols = carrier.rows.map((item) => fieldOf(item, field, location));
  for (const c of cols) requireSelect(state, c.lineage, 'field of a row value', location);
  const parts = cols.map((c) => c.lineage);
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

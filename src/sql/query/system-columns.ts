// System columns (ctid, xmin, cmin, xmax, cmax, tableoid) of relations read as stored rows.
import type { ColumnUse } from '../analysis-types.js';
import { CATALOG_SCHEMAS } from './catalog-names.js';
import type { Lineage } from './lineage.js';
import type { FromItem, ItemColumn } from './scope.js';

/** The system columns Postgres 15 resolves on a stored relation, with their (negative) attnums (sysattr.h). */
export const SYSTEM_COLUMNS: ReadonlyMap<string, number> = new Map([
  ['ctid', -1],
  ['xmin', -2],
  ['cmin', -3],
  ['xmax', -4],
  ['cmax', -5],
  ['tableoid', -6],
]);

/**
 * The system column `name` of FROM item `item`, or null when it has none of that name.
 * Input: the item, the (folded) column name and the reference's location.
 * Output: an ItemColumn whose lineage has no source (system columns hold no workspace data: no
 * column use, so SEE never judges them), requires SELECT on the table only, and predicts the
 * RowDescription origin Postgres 15 reports (the table's OID and the negative attnum).
 * Only a relation read as stored rows has them: a table, partitioned or foreign table,
 * materialized view, sequence or system catalog, never a view, derived table, CTE, function or
 * join (Postgres: 42703 there too; scanNSItemForColumn looks system columns up only on an
 * RTE_RELATION that is not a view).
 * `tableoid` of a partitioned table or a table with inheritance children (pg_class.relhassubclass;
 * a catalog without that field counts as having them) tells which child a row is stored in, which
 * the partition key — possibly a hidden column — decides: it is a `compute` use of every column
 * of the table (deferred, replayed where the column is consumed), so a hidden column refuses it.
 * Of a table without children it is a constant and reads nothing. Catalog relations are exempt
 * (their columns are never hidden).
 * Source: PostgreSQL src/include/access/sysattr.h, parse_relation.c (specialAttNum).
 */
export function systemColumn(item: FromItem, name: string, location: number): ItemColumn | null {
  const rel = item.base;
  const attnum = SYSTEM_COLUMNS.get(name);
  if (!rel || attnum === undefined || rel.kind === 'view') return null;
  const deferred: ColumnUse[] = [];
  const mayHaveChildren =
    rel.kind === 'partitioned' ||
    ((rel.kind === 'table' || rel.kind === 'foreign') && rel.hasChildren !== false);
  if (name === 'tableoid' && mayHaveChildren && !CATALOG_SCHEMAS.has(rel.schema)) {
    for (const c of rel.columns) {
      deferred.push({
        use: 'compute',
        context: `tableoid of ${rel.name}`,
        location,
        schema: rel.schema,
        table: rel.name,
        column: c.name,
      });
    }
  }
  const lineage: Lineage = {
    sources: [],
    deferred,
    rows: [],
    origin: { tableOid: rel.oid, attnum },
    requires: { schema: rel.schema, table: rel.name },
  };
  return { name, lineage };
}

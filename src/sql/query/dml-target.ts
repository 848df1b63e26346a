// The target of INSERT / UPDATE / DELETE / MERGE: which relations can be written, and their columns.
import type { CatalogRelation } from '../../catalog/types.js';
import type { Action, ColumnRef } from '../analysis-types.js';
import { CATALOG_SCHEMAS } from './catalog-names.js';
import { QueryRefusal, unsupported } from './errors.js';
import { type Env, walkExpr } from './expression.js';
import { loc, type Obj, str } from './node-kinds.js';
import { relationOf, storedItem } from './relation-item.js';
import type { FromItem } from './scope.js';
import type { QueryState } from './state.js';

/** A resolved write target: the relation and the FROM item its name and alias make visible. */
export interface Target {
  readonly rel: CatalogRelation;
  readonly item: FromItem;
}

/**
 * Resolves the RangeVar a write names and adds the `action` requirement on it (a CTE never
 * shadows a write target). Only tables, partitioned tables and foreign tables are written
 * here: a view, materialized view or sequence is refused (0A000 for views — pgwarden does not
 * follow writes through a view's rules; 42809 for the others, as Postgres would), and so is a
 * system catalog (0A000).
 */
export function writeTarget(state: QueryState, rv: Obj, action: Action, reason: string): Target {
  const rel = relationOf(state, rv);
  state.bind({
    kind: 'relation',
    location: loc(rv),
    schema: rel.schema,
    name: rel.name,
    oid: rel.oid,
    target: true,
  });
  if (CATALOG_SCHEMAS.has(rel.schema))
    unsupported(`a write into the system catalog ${rel.schema}.${rel.name}`, loc(rv));
  if (rel.kind === 'view') unsupported(`a write through view ${rel.schema}.${rel.name}`, loc(rv));
  if (rel.kind !== 'table' && rel.kind !== 'partitioned' && rel.kind !== 'foreign') {
    throw new QueryRefusal('42809', `cannot change ${rel.kind} "${rel.name}"`, loc(rv));
  }
  state.requireTable(action, rel.schema, rel.name, reason, loc(rv));
  return { rel, item: storedItem(rel, rv) };
}

/** The target column a SET / INSERT column list names. Throws 42703 when the relation has no such column. */
export function targetColumn(t: Target, name: string, location: number): ColumnRef {
  const c = t.rel.columns.find((col) => col.name === name);
  if (!c)
    throw new QueryRefusal('42703', `column "${name}" of relation "${t.rel.name}" does not exist`, location);
  return { schema: t.rel.schema, table: t.rel.name, column: c.name };
}

/**
 * A write into `col` (a `write-target` use and the column-level `action` requirement), plus the
 * subscripts or field names of `a[1] = …` / `a.f = …` (compute uses).
 */
export function writeInto(
  env: Env,
  col: ColumnRef,
  action: Action,
  indirection: unknown[],
  location: number,
): void {
  env.state.writeColumn(col, location);
  env.state.requireColumn(action, col, `${action} column`, location);
  for (const i of indirection) walkExpr(env, indices(i), { kind: 'compute', context: 'subscript' });
}

function indices(node: unknown): unknown {
  const o = node as Obj;
  if (o && typeof o === 'object' && 'A_Indices' in o) {
    const b = o.A_Indices as Obj;
    return { List: { items: [b.lidx, b.uidx].filter((x) => x !== undefined) } };
  }
  return undefined;
}

/** The statement-level reason text for a write requirement. */
export function reasonFor(kind: string): string {
  return str(kind);
}

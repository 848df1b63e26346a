// Column lineage: what flows into a column of a FROM item or a query result, and how a reference consumes it.
import type { ColumnOrigin, ColumnRef, ColumnUse, ResultColumn } from '../analysis-types.js';
import type { FromItem } from './scope.js';
import { type BaseColumn, type Mode, nested, type QueryState } from './state.js';

/**
 * The lineage of one column:
 * - `sources`: base columns that pass into it unchanged (a plain reference through derived tables,
 *   CTEs, views, joins, UNION ALL branches or VALUES rows);
 * - `deferred`: uses recorded inside an expression that computes it, replayed wherever the column
 *   is referenced (Postgres drops an unreferenced subquery output that calls nothing volatile:
 *   remove_unused_subquery_outputs);
 * - `rows`: the column holds whole rows of these FROM items (`SELECT u AS r FROM users u`; one
 *   item per merged branch: UNION ALL, VALUES rows, a recursive CTE's terms);
 * - `origin`: the RowDescription origin Postgres reports when this column is output as is.
 * - `requires`: the SELECT requirement a reference to it adds: a base or view column, or (for a
 *   system column, system-columns.ts) its table.
 */
export interface Lineage {
  readonly sources: readonly BaseColumn[];
  readonly deferred: readonly ColumnUse[];
  readonly rows: readonly FromItem[];
  readonly origin: ColumnOrigin;
  readonly requires: ColumnRef | TableRef | null;
}

/** A relation by exact names: the table-level SELECT a system column reference needs. */
export interface TableRef {
  readonly schema: string;
  readonly table: string;
  readonly column?: undefined;
}

/**
 * Adds the SELECT requirement a reference to a column with lineage `l` makes: column-level for a
 * base or view column, table-level for a system column, nothing for a derived one. Notes every
 * base column the lineage reaches as a plan read (QueryState.planReads).
 */
export function requireSelect(state: QueryState, l: Lineage, reason: string, location: number): void {
  for (const s of l.sources) state.noteRead(s, location);
  for (const u of l.deferred) if (u.use !== 'whole-row') state.noteRead(u, location);
  const r = l.requires;
  if (!r) return;
  if (r.column === undefined) state.requireTable('SELECT', r.schema, r.table, reason, location);
  else state.requireColumn('SELECT', r, reason, location);
}

/** The origin of an expression (no table). */
export const NO_ORIGIN: ColumnOrigin = { tableOid: 0, attnum: 0 };

/** The lineage of a value that nothing traceable flows into (a literal, `now()`). */
export const UNTRACEABLE: Lineage = {
  sources: [],
  deferred: [],
  rows: [],
  origin: NO_ORIGIN,
  requires: null,
};

/** The lineage of a base-table column read directly. */
export function baseLineage(col: BaseColumn): Lineage {
  return {
    sources: [col],
    deferred: [],
    rows: [],
    origin: { tableOid: col.tableOid, attnum: col.attnum },
    requires: { schema: col.schema, table: col.table, column: col.column },
  };
}

/** The same lineage as seen from an enclosing query (requirement already made inside it). */
export function passUp(l: Lineage, origin: ColumnOrigin = l.origin): Lineage {
  return { sources: l.sources, deferred: l.deferred, rows: l.rows, origin, requires: null };
}

function useKey(u: ColumnUse): string {
  const col = 'column' in u ? u.column : '';
  const extra =
    u.use === 'test' ? u.clause : u.use === 'compute' ? u.context : u.use === 'output' ? u.outputIndex : '';
  return `${u.use}|${extra}|${u.schema}.${u.table}.${col}|${u.location}`;
}

/** Merges lineages position-wise (UNION ALL branches, VALUES rows, a recursive CTE's two terms). */
export function mergeLineages(ls: readonly Lineage[], origin: ColumnOrigin = NO_ORIGIN): Lineage {
  const sources: BaseColumn[] = [];
  const seenSources = new Set<string>();
  const deferred: ColumnUse[] = [];
  const seenUses = new Set<string>();
  for (const l of ls) {
    for (const s of l.sources) {
      const k = `${s.schema}.${s.table}.${s.column}`;
      if (!seenSources.has(k)) {
        seenSources.add(k);
        sources.push(s);
      }
    }
    for (const u of l.deferred) {
      const k = useKey(u);
      if (!seenUses.has(k)) {
        seenUses.add(k);
        deferred.push(u);
      }
    }
  }
  // Whole rows survive the merge: a branch carrying `u` makes the merged column carry `u` too.
  const rows: FromItem[] = [];
  const seenRows = new Set<string>();
  for (const l of ls) {
    for (const r of l.rows) {
      const k = rowKey(r);
      if (!seenRows.has(k)) {
        seenRows.add(k);
        rows.push(r);
      }
    }
  }
  return { sources, deferred, rows, origin, requires: null };
}

/** A lineage whose every source flows through an expression: its uses become compute uses, deferred. */
export function computedFrom(
  state: QueryState,
  ls: readonly Lineage[],
  context: string,
  location: number,
): Lineage {
  const { uses } = state.collect(() => {
    for (const l of ls) consume(state, l, { kind: 'compute', context }, location);
  });
  return { sources: [], deferred: uses, rows: [], origin: NO_ORIGIN, requires: null };
}

const rowKeys = new WeakMap<FromItem, string>();

/**
 * A structural key for a FROM item carried as a row value: the base relation's OID, or for a
 * derived item its columns' names and lineage keys (a recursive term makes new items each pass,
 * so identity cannot tell whether the fixpoint is reached).
 */
function rowKey(item: FromItem): string {
  const hit = rowKeys.get(item);
  if (hit !== undefined) return hit;
  const k = item.base
    ? `base:${item.base.oid}`
    : `derived:${item.refname}(${item.columns.map((c) => `${c.name}=${lineageKey(c.lineage)}`).join(',')})`;
  rowKeys.set(item, k);
  return k;
}

/** A key of a lineage's sources, deferred uses and rows, order-insensitive. */
function lineageKey(l: Lineage): string {
  const s = l.sources.map((x) => `${x.schema}.${x.table}.${x.column}`).sort();
  const d = l.deferred.map(useKey).sort();
  const r = l.rows.map(rowKey).sort();
  return `[${s.join(';')}|${d.join(';')}|${r.join(';')}]`;
}

/**
 * Whether two lineages carry the same sources, deferred uses and whole rows (the recursive CTE
 * fixpoint test: a row carried only by the recursive term must keep the passes going).
 */
export function sameLineage(a: Lineage, b: Lineage): boolean {
  return lineageKey(a) === lineageKey(b);
}

/**
 * Records what a reference to a column with lineage `l` reads, under `mode`, at `location`:
 * one use per source, the deferred uses of its expression, and for a whole-row column the row.
 */
export function consume(state: QueryState, l: Lineage, mode: Mode, location: number): void {
  for (const s of l.sources) state.useColumn(s, mode, location);
  for (const u of l.deferred) {
    // A computed column tested outside is a test of what it is computed from (seed 004: renaming
    // a column on the way up does not unhide it).
    if (mode.kind === 'test' && (u.use === 'compute' || u.use === 'output')) {
      state.sink.push({
        use: 'test',
        clause: mode.clause,
        location: u.location,
        schema: u.schema,
        table: u.table,
        column: u.column,
      });
    } else state.sink.push(u);
  }
  for (const r of l.rows) consumeWholeRow(state, r, location);
}

/**
 * Records a FROM item used as a row value (`t`, `t.*` as an argument, `row_to_json(t)`):
 * a whole-row use of a base relation (and SELECT on each of its columns, as Postgres requires),
 * or, for a derived item, a compute use of whatever flows into each of its columns.
 */
export function consumeWholeRow(state: QueryState, item: FromItem, location: number): void {
  if (item.base) {
    state.useWholeRow(item.base.schema, item.base.name, location);
    for (const c of item.columns) {
      requireSelect(state, c.lineage, 'whole-row reference', location);
    }
    return;
  }
  for (const c of item.columns) {
    requireSelect(state, c.lineage, 'whole-row reference', location);
    consume(
      state,
      c.lineage,
      nested({ kind: 'compute', context: '' }, `whole row of ${item.refname}`),
      location,
    );
  }
}

/** The ResultColumn a query reports for a column of its result list. */
export function resultColumn(name: string, l: Lineage): ResultColumn {
  return {
    name,
    sources:
      l.sources.length > 0
        ? l.sources.map((s) => ({ schema: s.schema, table: s.table, column: s.column }))
        : null,
    origin: l.origin,
  };
}

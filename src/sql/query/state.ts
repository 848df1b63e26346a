// The mutable record one query analysis builds: uses, requirements, functions, catalog relations.
import type { Catalog, CatalogFunction } from '../../catalog/types.js';
import type {
  Action,
  ColumnRef,
  ColumnUse,
  CteDefinition,
  FunctionCall,
  PlanRead,
  RelationBinding,
  Requirement,
  TestClause,
} from '../analysis-types.js';

/**
 * How the value of a reference is consumed where it appears (DESIGN.md "Column uses"):
 * `output` only for a plain reference at the top of a statement's result list; `test` keeps its
 * clause through any expression nested inside it; `compute` for everything else.
 */
export type Mode =
  | { readonly kind: 'output'; readonly index: number }
  | { readonly kind: 'test'; readonly clause: TestClause }
  | { readonly kind: 'compute'; readonly context: string };

/** The mode for an operand nested in a construct: a test stays a test, anything else is compute. */
export function nested(mode: Mode, context: string): Mode {
  return mode.kind === 'test' ? mode : { kind: 'compute', context };
}

/** A test in `clause`, unless the surrounding mode already is a test (whose clause wins). */
export function testIn(mode: Mode, clause: TestClause): Mode {
  return mode.kind === 'test' ? mode : { kind: 'test', clause };
}

/**
 * SELECT requirements that Postgres's parser records no column for: a whole row (one Var of
 * attnum 0). A field of a row value is recorded (FieldSelect: find_expr_references_walker).
 */
export const UNBOUND_REASONS: ReadonlySet<string> = new Set(['whole-row reference']);

/** A base-table column as the analysis tracks it: names plus what RowDescription will report. */
export interface BaseColumn extends ColumnRef {
  readonly tableOid: number;
  readonly attnum: number;
  /** Names of the columns a generated column is computed from (same table). */
  readonly generatedFrom: readonly string[];
}

/** Everything one analyzeQuery call accumulates; `sink` is where uses currently go. */
export class QueryState {
  readonly uses: ColumnUse[] = [];
  sink: ColumnUse[] = this.uses;
  readonly requirements = new Map<string, Requirement>();
  readonly functions: FunctionCall[] = [];
  readonly catalogRelations = new Set<string>();
  /** RangeVars of the statement's own text and what they bound to (keyed by byte offset). */
  readonly relationBindings = new Map<number, RelationBinding>();
  /** CTEs defined in the statement's own text, keyed by byte offset. */
  readonly cteDefinitions = new Map<number, CteDefinition>();
  /** Set while a view body is analyzed: every location inside it is reported as the view reference's. */
  locationOverride: number | undefined;
  /** Set when a volatile or set-returning function was called since the last reset (see target-list.ts). */
  volatileSeen = false;
  /** The search path names resolve through: the session's, or the catalog reader's inside a view body. */
  path: readonly string[];
  /** Set inside a view body: the caller needs SELECT on the view, not on what it reads (views.ts). */
  suppressRequirements = false;
  /**
   * Every base column some plan node could read, by `schema.table.column`, with the first
   * location: whatever a reference anywhere reaches (unreferenced CTE and subquery outputs, view
   * bodies, whole rows). EXPLAIN shows each plan node's width (compound-statements.ts).
   */
  readonly planReads = new Map<string, PlanRead>();
  /**
   * The table and view columns references bind to, outside view bodies, the way Postgres's parser
   * binds them (a Var per column: plain references, stars, USING columns, the fields of a row
   * value; not whole rows): the resolution differential compares it with pg_depend.
   */
  readonly boundColumns = new Map<string, ColumnRef>();

  constructor(
    readonly catalog: Catalog,
    searchPath: readonly string[],
  ) {
    this.path = searchPath;
  }

  /** The location to report: the view reference's inside a view body, else `location`. */
  at(location: number): number {
    return this.locationOverride ?? location;
  }

  /** Notes that a plan node could read base column `ref` (see planReads). */
  noteRead(ref: ColumnRef, location: number): void {
    const key = `${ref.schema}.${ref.table}.${ref.column}`;
    if (!this.planReads.has(key))
      this.planReads.set(key, {
        schema: ref.schema,
        table: ref.table,
        column: ref.column,
        location: this.at(location),
      });
  }

  /** Records a use of a base column under `mode` at `location`. */
  useColumn(col: BaseColumn, mode: Mode, location: number): void {
    const ref = { schema: col.schema, table: col.table, column: col.column };
    const l = this.at(location);
    if (mode.kind === 'output')
      this.sink.push({ use: 'output', outputIndex: mode.index, location: l, ...ref });
    else if (mode.kind === 'test') this.sink.push({ use: 'test', clause: mode.clause, location: l, ...ref });
    else this.sink.push({ use: 'compute', context: mode.context, location: l, ...ref });
    // A generated column carries the columns it is computed from (DESIGN.md "Derived values").
    // Tested, it is a test of them too; read any other way, a compute use.
    for (const from of col.generatedFrom) {
      const src = { schema: col.schema, table: col.table, column: from, location: l };
      if (mode.kind === 'test') this.sink.push({ use: 'test', clause: mode.clause, ...src });
      else this.sink.push({ use: 'compute', context: `generated column ${col.column}`, ...src });
    }
  }

  /** Records a write into a base column (INSERT column, UPDATE SET target, MERGE action). */
  writeColumn(ref: ColumnRef, location: number): void {
    this.sink.push({ use: 'write-target', location: this.at(location), ...ref });
  }

  /** Records a whole-row use of a base relation. */
  useWholeRow(schema: string, table: string, location: number): void {
    this.sink.push({ use: 'whole-row', schema, table, location: this.at(location) });
  }

  /** Adds a table-level requirement (deduplicated on action and object). */
  requireTable(action: Action, schema: string, table: string, reason: string, location: number): void {
    if (this.suppressRequirements) return;
    const key = `${action} ${schema}.${table}`;
    if (!this.requirements.has(key)) {
      this.requirements.set(key, {
        action,
        object: { level: 'table', schema, table },
        reason,
        ...(location >= 0 ? { location: this.at(location) } : {}),
      });
    }
  }

  /**
   * Adds MANAGE on the database for `reason` (deduplicated on the reason), e.g. a user-defined
   * operator. Not suppressed inside a view body: the code runs whoever reads the view.
   */
  requireManage(reason: string, location: number): void {
    const key = `MANAGE ${reason}`;
    if (!this.requirements.has(key)) {
      this.requirements.set(key, {
        action: 'MANAGE',
        object: { level: 'database' },
        reason,
        ...(location >= 0 ? { location: this.at(location) } : {}),
      });
    }
  }

  /** Adds a column-level requirement (deduplicated on action and object). */
  requireColumn(action: Action, ref: ColumnRef, reason: string, location: number): void {
    if (this.suppressRequirements) return;
    const name = `${ref.schema}.${ref.table}.${ref.column}`;
    if (action === 'SELECT' && !UNBOUND_REASONS.has(reason) && !this.boundColumns.has(name))
      this.boundColumns.set(name, { schema: ref.schema, table: ref.table, column: ref.column });
    const key = `${action} ${name}`;
    if (!this.requirements.has(key)) {
      this.requirements.set(key, {
        action,
        object: { level: 'column', schema: ref.schema, table: ref.table, column: ref.column },
        reason,
        ...(location >= 0 ? { location: this.at(location) } : {}),
      });
    }
  }

  /**
   * Records what the RangeVar at byte offset `location` bound to. Nothing is recorded inside a
   * view body (its text is not the statement's) or for a node without a location.
   */
  bind(binding: RelationBinding): void {
    if (this.locationOverride !== undefined || binding.location < 0) return;
    this.relationBindings.set(binding.location, binding);
  }

  /** Records a CTE defined in the statement's own text (see {@link bind}). */
  defineCte(name: string, location: number): void {
    if (this.locationOverride !== undefined || location < 0) return;
    this.cteDefinitions.set(location, { name, location });
  }

  /** Records a resolved function call; notes volatility for the deferral rule of target-list.ts. */
  callFunction(fn: CatalogFunction, location: number): void {
    this.functions.push({ schema: fn.schema, name: fn.name, oid: fn.oid, location: this.at(location) });
    if (fn.volatility === 'volatile' || fn.returnsSet) this.volatileSeen = true;
  }

  /** Runs `f` with uses going to a fresh bucket; returns the bucket and whether a volatile call was seen. */
  collect(f: () => void): { uses: ColumnUse[]; volatile: boolean } {
    const savedSink = this.sink;
    const savedVolatile = this.volatileSeen;
    const bucket: ColumnUse[] = [];
    this.sink = bucket;
    this.volatileSeen = false;
    try {
      f();
      return { uses: bucket, volatile: this.volatileSeen };
    } finally {
      this.sink = savedSink;
      this.volatileSeen = savedVolatile || this.volatileSeen;
    }
  }
}

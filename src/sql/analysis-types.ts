// The Analysis value: what one SQL string does, statement by statement, for the policy to decide on.

/** Row actions and MANAGE (seed 004, "Actions"). SEE is not a requirement: it is checked per column use. */
export type Action = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'MANAGE';

/** A base-table column, by exact (already folded) names. */
export interface ColumnRef {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
}

/**
 * The object a requirement is on (seed 004, "Permission levels"): the database itself (MANAGE),
 * a relation, or one column of it.
 */
export type RequirementObject =
  | { readonly level: 'database' }
  | { readonly level: 'table'; readonly schema: string; readonly table: string }
  | ({ readonly level: 'column' } & ColumnRef);

/** One (action, object) pair the statement needs (DESIGN.md "Requirements"). `reason` is for messages. */
export interface Requirement {
  readonly action: Action;
  readonly object: RequirementObject;
  /** Why it is needed, e.g. `DROP TABLE`, `function pg_read_file`, `catalog relation pg_stats`. */
  readonly reason: string;
  /** 0-based character offset in the whole SQL string, when it points at one reference. */
  readonly location?: number;
}

/** Clauses in which a column is tested (DESIGN.md "Column uses": `test`). */
export type TestClause =
  | 'WHERE'
  | 'JOIN ON'
  | 'JOIN USING'
  | 'NATURAL JOIN'
  | 'GROUP BY'
  | 'HAVING'
  | 'ORDER BY'
  | 'WINDOW'
  | 'FILTER'
  | 'DISTINCT'
  | 'SET OPERATION'
  | 'ON CONFLICT'
  | 'MERGE ON'
  | 'MERGE WHEN'
  | 'WITHIN GROUP'
  | 'CASE'
  | 'LIMIT'
  | 'RETURNING'
  | 'SEARCH'
  | 'CYCLE';

/**
 * One use of a base-table column, or of a whole table row (DESIGN.md "Column uses").
 * - `output`: passes unchanged to result column `outputIndex` (0-based);
 * - `write-target`: stored into by INSERT/UPDATE/MERGE;
 * - `test`: read by the clause `clause`;
 * - `compute`: any other read of the value (`context` says where, e.g. `function lower`, `INSERT … SELECT`);
 * - `whole-row`: the table used as a value; `column` is absent.
 */
export type ColumnUse =
  | ({ readonly use: 'output'; readonly outputIndex: number; readonly location: number } & ColumnRef)
  | ({ readonly use: 'write-target'; readonly location: number } & ColumnRef)
  | ({ readonly use: 'test'; readonly clause: TestClause; readonly location: number } & ColumnRef)
  | ({ readonly use: 'compute'; readonly context: string; readonly location: number } & ColumnRef)
  | { readonly use: 'whole-row'; readonly schema: string; readonly table: string; readonly location: number };

/** The RowDescription origin Postgres will report for a result column (0/0 for an expression). */
export interface ColumnOrigin {
  readonly tableOid: number;
  readonly attnum: number;
}

/**
 * One result column of a row-returning statement (SELECT, RETURNING, EXPLAIN has none here).
 * `sources` lists the base columns that flow into it unchanged (one, or one per UNION ALL branch),
 * or is null when the column is untraceable (a literal, `count(*)`, an expression).
 */
export interface ResultColumn {
  readonly name: string;
  readonly sources: readonly ColumnRef[] | null;
  readonly origin: ColumnOrigin;
}

/** A function the statement calls, resolved to its catalog entry (or unresolved: refused upstream of here). */
export interface FunctionCall {
  readonly schema: string;
  readonly name: string;
  readonly oid: number;
  readonly location: number;
}

/** How a statement changes the session state the proxy tracks (DESIGN.md "Session control"). */
export type SessionEffect =
  | { readonly kind: 'set-search-path'; readonly path: readonly string[]; readonly local: boolean }
  | { readonly kind: 'reset-search-path' }
  | { readonly kind: 'begin' }
  | { readonly kind: 'commit' }
  | { readonly kind: 'rollback' }
  | { readonly kind: 'savepoint'; readonly name: string }
  | { readonly kind: 'rollback-to'; readonly name: string }
  | { readonly kind: 'release'; readonly name: string }
  | { readonly kind: 'discard-all' }
  | { readonly kind: 'prepare'; readonly name: string; readonly inner: StatementAnalysis }
  | { readonly kind: 'deallocate'; readonly name: string | null /* null: ALL */ }
  | { readonly kind: 'execute'; readonly name: string }
  | { readonly kind: 'declare-cursor'; readonly name: string; readonly inner: StatementAnalysis }
  | { readonly kind: 'close-cursor'; readonly name: string | null /* null: ALL */ }
  | {
      readonly kind: 'fetch';
      readonly name: string /** MOVE: positions the cursor, returns no rows. */;
      readonly move: boolean;
    };

/** A base column a plan node could read, at the (character) location of the first reference reaching it. */
export interface PlanRead extends ColumnRef {
  readonly location: number;
}

/** Statement kinds (seed 004's actions, plus session control that needs no permission). */
export type StatementKind = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'MERGE' | 'MANAGE' | 'SESSION';

/** A refusal the analysis itself makes: it cannot vouch for the statement (fail closed). */
export interface AnalysisRefusal {
  /** SQLSTATE Postgres would use: 42601, 42P01, 42703, 42702, 0A000, 42501, … */
  readonly sqlstate: string;
  readonly message: string;
  readonly detail?: string;
  readonly hint?: string;
  /** 0-based character offset into the whole SQL string. */
  readonly location?: number;
}

/**
 * What one RangeVar of the statement's own text was bound to, for the mask-at-read rewrite
 * (DESIGN.md "Three walls", wall 2: the text sent upstream names exactly what was decided).
 * `location` is the RangeVar's UTF-8 byte offset in the whole SQL string, as libpg-query reports
 * it. `target`: the relation an INSERT/UPDATE/DELETE/MERGE writes (never wrapped, only
 * qualified). A `cte` binding names the CommonTableExpr it resolved to by the byte offset of its
 * definition. References inside a view's stored definition are not in the text and not listed.
 */
export type RelationBinding =
  | {
      readonly kind: 'relation';
      readonly location: number;
      readonly schema: string;
      readonly name: string;
      readonly oid: number;
      readonly target: boolean;
    }
  | { readonly kind: 'cte'; readonly location: number; readonly definition: number };

/** A CTE defined in the statement's text: its name and the byte offset of its CommonTableExpr. */
export interface CteDefinition {
  readonly location: number;
  readonly name: string;
}

/** Every relation reference and CTE definition of a statement's text (nested statements included). */
export interface StatementBindings {
  readonly relations: readonly RelationBinding[];
  readonly ctes: readonly CteDefinition[];
}

/** The analysis of one statement of a (possibly multi-statement) SQL string. */
export interface StatementAnalysis {
  /** Top-level parse node name, e.g. `SelectStmt`, `VariableSetStmt`. */
  readonly nodeType: string;
  readonly kind: StatementKind;
  /** Character offset and length of the statement in the SQL string (stmt_location/stmt_len). */
  readonly location: number;
  readonly length: number;
  readonly requirements: readonly Requirement[];
  readonly resultColumns: readonly ResultColumn[];
  readonly uses: readonly ColumnUse[];
  readonly functions: readonly FunctionCall[];
  /** `schema.name` of catalog relations (pg_catalog, information_schema) read. */
  readonly catalogRelations: readonly string[];
  readonly sessionEffects: readonly SessionEffect[];
  /**
   * Every base column some plan node of the statement could read — whatever any reference
   * reaches, CTE and subquery outputs nobody references and view bodies included — for EXPLAIN,
   * which shows each node's width (absent: none).
   */
  readonly planReads?: readonly PlanRead[];
  /**
   * The table and view columns the statement's references bind to, as Postgres's parser binds
   * them (pg_depend of a view of the statement lists the same): the resolution differential's
   * side (absent: none).
   */
  readonly boundColumns?: readonly ColumnRef[];
  /** The relations and CTEs its text names, as bound (row statements and the queries nested in others). */
  readonly bindings?: StatementBindings;
  /** Set when the statement cannot be vouched for; the whole string is then refused. */
  readonly refusal?: AnalysisRefusal;
}

/** The analysis of a whole SQL string. `refusal` repeats the first statement refusal (or a parse error). */
export interface Analysis {
  readonly statements: readonly StatementAnalysis[];
  readonly refusal?: AnalysisRefusal;
}

// Statements built around a query: EXPLAIN, CREATE TABLE AS / SELECT INTO / CREATE [MATERIALIZED] VIEW, COPY.

import type { ColumnUse, Requirement, StatementAnalysis } from './analysis-types.js';
import { toCompute } from './session-control.js';
import {
  emptyAnalysis,
  manageRequirement,
  refusalAt,
  refusedStatement,
  type StatementContext,
  unwrapNode,
} from './statement-context.js';

type Fields = Record<string, unknown>;

/** Turns every `output` use into a `compute` use with `context`: the value is stored, not returned. */
function outputsToCompute(uses: readonly ColumnUse[], context: string): ColumnUse[] {
  return uses.map((u) => (u.use === 'output' ? toCompute(u, context) : u));
}

/**
 * MANAGE for `reason` plus everything the nested query needs, its outputs turned into `compute`
 * uses (DESIGN.md "Requirements": a statement that does two things needs both; "Column uses": a
 * value stored by CREATE TABLE AS, SELECT INTO, CREATE VIEW is a compute use). No result columns.
 */
function manageWithQuery(ctx: StatementContext, reason: string, inner: StatementAnalysis): StatementAnalysis {
  const requirements: Requirement[] = [manageRequirement(ctx, reason), ...inner.requirements];
  const base: StatementAnalysis = {
    ...emptyAnalysis(ctx, 'MANAGE'),
    requirements,
    uses: outputsToCompute(inner.uses, reason),
    functions: inner.functions,
    catalogRelations: inner.catalogRelations,
    ...(inner.planReads ? { planReads: inner.planReads } : {}),
    ...(inner.boundColumns ? { boundColumns: inner.boundColumns } : {}),
  };
  if (inner.refusal) return { ...base, refusal: inner.refusal };
  if (inner.sessionEffects.length > 0) {
    return {
      ...base,
      refusal: refusalAt(ctx, '0A000', `${reason} of a query that changes search_path is not supported`),
    };
  }
  return base;
}

/**
 * EXPLAIN [ANALYZE] <statement>: decided as the statement it explains (its kind, requirements,
 * functions and catalog relations; EXPLAIN ANALYZE runs it). No result columns (it returns plan
 * text), and the inner `output` uses become `compute` uses: the plan shows each output's average
 * width (pg_statistic), and EXPLAIN ANALYZE its sort and hash memory, both of which follow the
 * values; every other use stays (a row estimate for `WHERE ssn = '…'` answers from statistics);
 * and every base column some plan node could read (planReads) is a `compute` use in `EXPLAIN
 * plan`: each node shows the width of what it reads.
 * Refused 0A000: EXPLAIN EXECUTE (and any session-control statement), and an explained statement
 * that changes search_path.
 */
export function explainStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const inner = ctx.analyzeNested(n.query);
  if (inner.refusal) return { ...emptyAnalysis(ctx, inner.kind), refusal: inner.refusal };
  if (inner.kind === 'SESSION') {
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', `EXPLAIN of ${inner.nodeType} is not supported: explain the statement itself`),
    );
  }
  if (inner.sessionEffects.length > 0) {
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', 'EXPLAIN of a statement that changes search_path is not supported'),
      inner.kind,
    );
  }
  // EXPLAIN ANALYZE runs the statement and reports what it took: sort and hash memory, heap
  // fetches, rows per node, all of which grow with the values it output (a masked email's length
  // shows in "Sort Memory"). Its outputs are read, so they are compute uses there (attack corpus).
  const analyzed = (Array.isArray(n.options) ? n.options : []).some((o) => {
    const d = unwrapNode(o);
    if (d?.type !== 'DefElem') return false;
    const f = d.node as { defname?: string; arg?: unknown };
    if (f.defname !== 'analyze') return false;
    if (f.arg === undefined) return true;
    const v = unwrapNode(f.arg)?.node as { sval?: string } | undefined;
    return !['off', 'false', '0', 'no'].includes(String(v?.sval ?? 'on').toLowerCase());
  });
  // Legacy syntax `EXPLAIN ANALYZE stmt` sets the same DefElem.
  // Plain EXPLAIN prints each output's average width, pg_statistic's avg_width of the column
  // (attack corpus 2): the outputs are read there too.
  const uses = outputsToCompute(inner.uses, analyzed ? 'EXPLAIN ANALYZE output' : 'EXPLAIN output');
  // Every plan node prints its width, pg_statistic's avg_width of what it reads: a materialized
  // CTE or a subquery scan shows a hidden column's width even when nothing above it reads the
  // column (issue 13). Every base column a node could read is read by EXPLAIN.
  for (const r of inner.planReads ?? [])
    uses.push({
      use: 'compute',
      context: 'EXPLAIN plan',
      location: r.location,
      schema: r.schema,
      table: r.table,
      column: r.column,
    });
  return {
    ...emptyAnalysis(ctx, inner.kind),
    requirements: inner.requirements,
    uses,
    functions: inner.functions,
    catalogRelations: inner.catalogRelations,
  };
}

/**
 * CREATE TABLE AS / CREATE MATERIALIZED VIEW (`WITH NO DATA` too: the definition is stored):
 * MANAGE + the query's requirements, outputs as compute uses. `CREATE TABLE … AS EXECUTE` is
 * refused 0A000 (the prepared statement is not known here).
 */
export function createTableAsStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const reason = n.objtype === 'OBJECT_MATVIEW' ? 'CREATE MATERIALIZED VIEW' : 'CREATE TABLE AS';
  const q = unwrapNode(n.query);
  if (q?.type === 'ExecuteStmt') {
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', 'CREATE TABLE … AS EXECUTE is not supported: write the query'),
    );
  }
  return manageWithQuery(ctx, reason, ctx.analyzeNested(n.query));
}

/** CREATE [OR REPLACE] [RECURSIVE] VIEW: MANAGE + the view query's requirements, outputs as compute uses. */
export function viewStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  return manageWithQuery(
    ctx,
    n.replace === true ? 'CREATE OR REPLACE VIEW' : 'CREATE VIEW',
    ctx.analyzeNested(n.query),
  );
}

/**
 * SELECT … INTO new_table: MANAGE (it creates a table) + the query's requirements, outputs as
 * compute uses. The query is analyzed without its INTO clause.
 */
export function selectIntoStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const { intoClause: _into, ...query } = n;
  return manageWithQuery(ctx, 'SELECT INTO', ctx.analyzeNested({ SelectStmt: query }));
}

/** `SELECT <columns or *> FROM <relation>` as a parse tree, for COPY's table form. */
function selectFromRelation(relation: Fields, attlist: unknown): unknown {
  const loc = typeof relation.location === 'number' ? relation.location : -1;
  const names = Array.isArray(attlist) ? attlist : [];
  const targetList =
    names.length > 0
      ? names.map((col) => ({
          ResTarget: { val: { ColumnRef: { fields: [col], location: loc } }, location: loc },
        }))
      : [{ ResTarget: { val: { ColumnRef: { fields: [{ A_Star: {} }], location: loc } }, location: loc } }];
  return {
    SelectStmt: {
      targetList,
      fromClause: [{ RangeVar: relation }],
      limitOption: 'LIMIT_OPTION_DEFAULT',
      op: 'SETOP_NONE',
    },
  };
}

/**
 * COPY: MANAGE always (DESIGN.md: loading and exporting in bulk; COPY TO STDOUT cannot be masked).
 * - `COPY t [(cols)] TO …` and `COPY (query) TO …`: + SELECT on what it reads, every column read a
 *   `compute` use (`COPY TO`), so a hidden column refuses the statement instead of being masked;
 * - `COPY t [(cols)] FROM …`: + INSERT on the table and its columns, each a `write-target` use;
 * - to or from a file or a PROGRAM: the reason says so (`COPY TO PROGRAM`, `COPY FROM file`).
 */
export function copyStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const from = n.is_from === true;
  const dir = from ? 'FROM' : 'TO';
  const where =
    n.is_program === true
      ? ' PROGRAM'
      : typeof n.filename === 'string'
        ? ' file'
        : from
          ? ' STDIN'
          : ' STDOUT';
  const reason = `COPY ${dir}${where}`;
  const relation = n.relation as Fields | undefined;
  if (!from) {
    const inner = ctx.analyzeNested(
      n.query ?? (relation ? selectFromRelation(relation, n.attlist) : undefined),
    );
    return manageWithQuery(ctx, reason, inner);
  }
  if (!relation) return refusedStatement(ctx, refusalAt(ctx, '42601', 'COPY FROM needs a table'));
  // Resolve the target and its columns as `SELECT cols FROM t` would, then restate as INSERT.
  const probe = ctx.analyzeNested(selectFromRelation(relation, n.attlist));
  const requirements: Requirement[] = [manageRequirement(ctx, reason)];
  for (const r of probe.requirements) {
    if (r.action === 'SELECT') requirements.push({ ...r, action: 'INSERT', reason: 'COPY FROM' });
    else requirements.push(r);
  }
  const uses: ColumnUse[] = probe.uses.map((u) =>
    u.use === 'output'
      ? { use: 'write-target', schema: u.schema, table: u.table, column: u.column, location: u.location }
      : u,
  );
  const base: StatementAnalysis = { ...emptyAnalysis(ctx, 'MANAGE'), requirements, uses };
  return probe.refusal ? { ...base, refusal: probe.refusal } : base;
}

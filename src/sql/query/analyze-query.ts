// Entry point of the row-statement analysis: scopes, lineage, column uses and requirements of one statement.
import type { Catalog } from '../../catalog/types.js';
import type {
  AnalysisRefusal,
  ColumnRef,
  ColumnUse,
  FunctionCall,
  PlanRead,
  Requirement,
  ResultColumn,
  StatementBindings,
} from '../analysis-types.js';
import { analyzeDml } from './dml.js';
import { QueryRefusal } from './errors.js';
import { consume, resultColumn } from './lineage.js';
import type { Obj } from './node-kinds.js';
import { analyzeSelect } from './select.js';
import { QueryState } from './state.js';
import type { OutColumn } from './target-list.js';

/** What the analysis needs from the session: the catalog value and the tracked search_path. */
export interface QueryContext {
  readonly catalog: Catalog;
  /** The session's search_path, without the implicit pg_catalog. */
  readonly searchPath: readonly string[];
}

/** The analysis of one row statement (see DESIGN.md "Analysis"). `refusal` set: nothing else is to be trusted. */
export interface QueryResult {
  kind: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'MERGE';
  requirements: Requirement[];
  resultColumns: ResultColumn[];
  uses: ColumnUse[];
  functions: FunctionCall[];
  catalogRelations: string[];
  /** Every base column a plan node could read, with a location (QueryState.planReads). */
  planReads: PlanRead[];
  /** The table and view columns references bind to, as Postgres's parser binds them (QueryState.boundColumns). */
  boundColumns: ColumnRef[];
  /** Relation references and CTE definitions of the statement's text (byte offsets). */
  bindings: StatementBindings;
  refusal?: AnalysisRefusal;
}

/** The row statement node kinds analyzeQuery takes. */
export type QueryNodeType = 'SelectStmt' | 'InsertStmt' | 'UpdateStmt' | 'DeleteStmt' | 'MergeStmt';

const KINDS: Record<QueryNodeType, QueryResult['kind']> = {
  SelectStmt: 'SELECT',
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
};

/**
 * Analyzes one row statement: `node` is the libpg-query 15 JSON body of a SelectStmt,
 * InsertStmt, UpdateStmt, DeleteStmt or MergeStmt (also the inner query of EXPLAIN, PREPARE,
 * DECLARE, CREATE TABLE AS / VIEW, COPY (query)). Returns its requirements (SELECT on every
 * relation named and every column referenced, the write action on targets, UPDATE for FOR
 * UPDATE/SHARE), its result columns with lineage and predicted RowDescription origin, every
 * column use (DESIGN.md "Column uses"), the functions called and the catalog relations read.
 * Never throws for a statement it cannot vouch for: `refusal` carries the SQLSTATE Postgres
 * would use (42703 unknown column — including `u.to_json`, 42P01 unknown relation, 42702
 * ambiguous, 42883 unknown function, 42P10, 42601) or 0A000 for a construct without a rule;
 * locations are byte offsets as libpg-query reports them.
 * Source: PostgreSQL's parse analysis (transformColumnRef, FigureColname, markTargetListOrigins),
 * seed 004 "Hiding a column" and "Allow and deny".
 */
export function analyzeQuery(nodeType: QueryNodeType, node: unknown, ctx: QueryContext): QueryResult {
  const state = new QueryState(ctx.catalog, ctx.searchPath);
  const kind = KINDS[nodeType];
  let resultColumns: ResultColumn[] = [];
  let refusal: AnalysisRefusal | undefined;
  try {
    if (!(nodeType in KINDS))
      throw new QueryRefusal('0A000', `pgwarden cannot analyze a ${nodeType} as a query`);
    const body = node as Obj;
    const out: OutColumn[] =
      nodeType === 'SelectStmt'
        ? analyzeSelect(state, body, null)
        : analyzeDml(state, nodeType, body, null).columns;
    // The statement's own result: a plain reference is an `output` use of result column k.
    out.forEach((c, k) => {
      consume(state, c.lineage, { kind: 'output', index: k }, c.location);
    });
    resultColumns = out.map((c) => resultColumn(c.name, c.lineage));
  } catch (e) {
    if (e instanceof QueryRefusal) refusal = e.toRefusal();
    else if (e instanceof RangeError)
      refusal = { sqlstate: '54001', message: 'statement too deeply nested to analyze' };
    else throw e;
  }
  return {
    kind,
    requirements: [...state.requirements.values()],
    resultColumns,
    uses: distinctUses(state.uses),
    functions: state.functions,
    catalogRelations: [...state.catalogRelations],
    planReads: [...state.planReads.values()],
    boundColumns: [...state.boundColumns.values()],
    bindings: { relations: [...state.relationBindings.values()], ctes: [...state.cteDefinitions.values()] },
    ...(refusal ? { refusal } : {}),
  };
}

/**
 * The uses without exact repeats (same use, column, clause or context, and location): an
 * expression's uses are recorded where it is computed and replayed where its column is
 * consumed, which may record the very same use twice. Two uses repeat each other exactly when
 * their JSON texts are equal (same properties in the same order, same values); they are bucketed
 * by kind, column and location first and compared property by property, with no JSON text built
 * per use (issue 18: a JSON.stringify per use was 5% of the cold analysis of the long CTE).
 */
function distinctUses(uses: readonly ColumnUse[]): ColumnUse[] {
  const buckets = new Map<string, ColumnUse[]>();
  const out: ColumnUse[] = [];
  for (const u of uses) {
    // The bucket key only narrows the comparison: a collision just compares more uses.
    const key = `${u.use}|${u.location}|${'column' in u ? u.column : ''}`;
    const bucket = buckets.get(key);
    if (bucket === undefined) buckets.set(key, [u]);
    else if (bucket.some((seen) => sameJson(seen, u))) continue;
    else bucket.push(u);
    out.push(u);
  }
  return out;
}

/** Whether two uses have the same JSON text (compared directly for flat string and finite number values). */
function sameJson(a: ColumnUse, b: ColumnUse): boolean {
  if (a === b) return true;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length === kb.length) {
    let direct = true;
    for (let i = 0; i < ka.length && direct; i++) {
      const k = ka[i] as string;
      if (k !== kb[i]) return JSON.stringify(a) === JSON.stringify(b);
      const va: unknown = (a as unknown as Record<string, unknown>)[k];
      const vb: unknown = (b as unknown as Record<string, unknown>)[k];
      if (typeof va === 'string' && typeof vb === 'string') {
        if (va !== vb) return false;
      } else if (
        typeof va === 'number' &&
        typeof vb === 'number' &&
        Number.isFinite(va) &&
        Number.isFinite(vb)
      ) {
        if (va !== vb) return false;
      } else direct = false;
    }
    if (direct) return true;
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

// Finds, in a libpg-query tree, every RangeVar the rewrite must account for, and the DML nodes with RETURNING.

/** A JSON object of the parse tree. */
export type Obj = Record<string, unknown>;

/** Statement kinds whose text the rewrite qualifies and masks; any other statement is sent as written. */
export const REWRITTEN_STATEMENTS: ReadonlySet<string> = new Set([
  'SelectStmt',
  'InsertStmt',
  'UpdateStmt',
  'DeleteStmt',
  'MergeStmt',
  'ExplainStmt',
  'PrepareStmt',
  'DeclareCursorStmt',
  'CreateTableAsStmt',
  'CopyStmt',
]);

/**
 * Whether the statement is one the rewrite handles: a row statement, or one holding a query
 * (EXPLAIN, PREPARE, DECLARE, CREATE TABLE AS — not CREATE MATERIALIZED VIEW, whose stored
 * definition serves every reader —, COPY (query); COPY of a table is MANAGE and refused when it
 * reads a hidden column).
 */
export function isRewritten(nodeType: string, node: Obj): boolean {
  if (!REWRITTEN_STATEMENTS.has(nodeType)) return false;
  if (nodeType === 'CreateTableAsStmt') return node.objtype !== 'OBJECT_MATVIEW';
  if (nodeType === 'CopyStmt') return node.relation === undefined && node.query !== undefined;
  return true;
}

/** A RangeVar as found: its fields and whether it is the relation of a TABLESAMPLE. */
export interface FoundRangeVar {
  readonly node: Obj;
  readonly location: number;
  readonly sampled: boolean;
}

/** A DML node (INSERT/UPDATE/DELETE) with a RETURNING list. */
export interface FoundDml {
  readonly node: Obj;
  readonly target: Obj;
  /** UPDATE … FROM or DELETE … USING items: `RETURNING *` then returns their columns too. */
  readonly otherItems: boolean;
}

/** A write (INSERT/UPDATE/DELETE/MERGE) node and its target RangeVar: what target-reads.ts masks. */
export interface FoundWrite {
  readonly kind: 'InsertStmt' | 'UpdateStmt' | 'DeleteStmt' | 'MergeStmt';
  readonly node: Obj;
  readonly target: Obj;
}

/** What {@link walkStatement} collects. */
export interface Found {
  readonly rangeVars: FoundRangeVar[];
  readonly ctes: Obj[];
  readonly dml: FoundDml[];
  /** Every write node, nested ones (a data-modifying WITH) included. */
  readonly writes: FoundWrite[];
  /** System column names any ColumnRef names (`ctid`, `u.xmin`). */
  readonly systemColumns: Set<string>;
  /** Whether any ColumnRef is a star (`*`, `t.*`), TABLE's included. */
  star: boolean;
  /** `[schema, table]` of ColumnRefs with three or more fields (`public.users.id`). */
  readonly qualifiedColumnRefs: [string, string][];
}

const SYSTEM = new Set(['ctid', 'xmin', 'xmax', 'cmin', 'cmax', 'tableoid']);

/**
 * Whether `key` of node `o` (of kind `kind`) repeats a subtree printed earlier: the parse tree
 * shares one source among the MultiAssignRefs of `SET (a, b) = (SELECT …)`, and libpg-query's JSON
 * writes it out again under each column after the first (colno > 1). Walkers visit it once, as the
 * analysis does (update-delete.ts analyzeSet).
 */
export function repeatedSubtree(kind: string, o: Obj, key: string): boolean {
  return kind === 'MultiAssignRef' && key === 'source' && typeof o.colno === 'number' && o.colno > 1;
}

/** Whether `o` is a RangeVar's fields (libpg-query writes some unwrapped: `relation`, `rel`). */
export function isRangeVar(o: Obj): boolean {
  return typeof o.relname === 'string' && 'relpersistence' in o;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/**
 * Walks every node of a statement (exhaustively: every key of every object, so a RangeVar in a
 * node kind nobody listed is still found) and collects RangeVars, CTE definitions, DML nodes with
 * RETURNING and the ColumnRef facts the rewrite needs. `root` is the statement's fields, of kind
 * `nodeType`. Skipped: the relation an INTO clause
 * creates and the names of `FOR UPDATE OF` (they name FROM items, not relations).
 */
export function walkStatement(root: unknown, nodeType: string): Found {
  const found: Found = {
    rangeVars: [],
    ctes: [],
    dml: [],
    writes: [],
    systemColumns: new Set(),
    star: false,
    qualifiedColumnRefs: [],
  };
  const visit = (v: unknown, key: string, sampled: boolean): void => {
    if (Array.isArray(v)) {
      for (const x of v) visit(x, key, sampled);
      return;
    }
    if (!v || typeof v !== 'object') return;
    const o = v as Obj;
    if (key === 'lockedRels' || key === 'intoClause' || key === 'into') return;
    if (isRangeVar(o)) {
      found.rangeVars.push({ node: o, location: typeof o.location === 'number' ? o.location : -1, sampled });
      return;
    }
    if (key === 'CommonTableExpr') found.ctes.push(o);
    if (key === 'ColumnRef') noteColumnRef(o, found);
    if (key === 'InsertStmt' || key === 'UpdateStmt' || key === 'DeleteStmt' || key === 'MergeStmt') {
      const target = o.relation as Obj | undefined;
      if (target) found.writes.push({ kind: key, node: o, target });
    }
    if (
      (key === 'InsertStmt' || key === 'UpdateStmt' || key === 'DeleteStmt') &&
      Array.isArray(o.returningList)
    ) {
      const target = o.relation as Obj | undefined;
      const others = key === 'UpdateStmt' ? o.fromClause : key === 'DeleteStmt' ? o.usingClause : undefined;
      if (target) found.dml.push({ node: o, target, otherItems: Array.isArray(others) && others.length > 0 });
    }
    for (const [k, child] of Object.entries(o)) {
      if (repeatedSubtree(key, o, k)) continue;
      visit(child, k, key === 'RangeTableSample' && k === 'relation' ? true : sampled && k === 'RangeVar');
    }
  };
  visit(root, nodeType, false);
  return found;
}

function noteColumnRef(o: Obj, found: Found): void {
  const fields = Array.isArray(o.fields) ? (o.fields as Obj[]) : [];
  const names: string[] = [];
  for (const f of fields) {
    if (f && typeof f === 'object' && 'A_Star' in f) found.star = true;
    const s = f && typeof f === 'object' ? (f.String as Obj | undefined) : undefined;
    names.push(s ? str(s.sval) : '');
  }
  for (const n of names) if (SYSTEM.has(n)) found.systemColumns.add(n);
  if (names.length >= 3)
    found.qualifiedColumnRefs.push([names[names.length - 3] ?? '', names[names.length - 2] ?? '']);
}

/** The fields of a ColumnRef as names (`'*'` for A_Star, `''` for anything else). */
export function columnRefFields(ref: Obj): (string | '*')[] {
  const fields = Array.isArray(ref.fields) ? (ref.fields as Obj[]) : [];
  return fields.map((f) => {
    if (f && 'A_Star' in f) return '*';
    const s = (f?.String as Obj | undefined)?.sval;
    return typeof s === 'string' ? s : '';
  });
}

// A write's reads of its own target: references to the target's hidden columns become the mask constant, whole-row reads are refused.
import type { CatalogRelation } from '../catalog/types.js';
import type { ColumnUse } from '../sql/analysis-types.js';
import type { Edit, RewriteRefusal } from './edits.js';
import { MASK_CONSTANT } from './masking-subquery.js';
import { columnRefEnd } from './relation-spans.js';
import type { Token } from './sql-tokens.js';
import { columnRefFields, type FoundWrite, type Obj, repeatedSubtree } from './tree-walk.js';

/**
 * Keys of a write node that hold no read of the target's row: the target itself, RETURNING
 * (returning-masks.ts), the WITH clause and the other FROM items (Postgres lets none of them
 * refer to the target), INSERT's column list and source query (neither sees the target's row), and
 * ON CONFLICT's arbiter inference (index expressions and predicate, matched to indexes, never
 * evaluated over a row). Everything else — WHERE, SET values and their subscripts, ON CONFLICT
 * … WHERE and SET, MERGE's join condition, WHEN conditions, SET values and INSERT values — is
 * evaluated by PostgreSQL over the target's stored row (analyze.c transformUpdateStmt,
 * transformMergeStmt, transformOnConflictClause).
 */
const NOT_READING: Readonly<Record<FoundWrite['kind'], ReadonlySet<string>>> = {
  UpdateStmt: new Set(['relation', 'returningList', 'withClause', 'fromClause']),
  DeleteStmt: new Set(['relation', 'returningList', 'withClause', 'usingClause']),
  InsertStmt: new Set(['relation', 'returningList', 'withClause', 'cols', 'selectStmt', 'infer']),
  MergeStmt: new Set(['relation', 'withClause', 'sourceRelation']),
};

/** Every ColumnRef under the reading keys of `write` (its subqueries included: they may be correlated). */
function readingColumnRefs(write: FoundWrite): Obj[] {
  const out: Obj[] = [];
  const skip = NOT_READING[write.kind];
  const visit = (v: unknown, key: string, top: boolean): void => {
    if (Array.isArray(v)) {
      for (const x of v) visit(x, key, top);
      return;
    }
    if (!v || typeof v !== 'object') return;
    if (key === 'ColumnRef') {
      out.push(v as Obj);
      return;
    }
    for (const [k, c] of Object.entries(v as Obj)) {
      // ON CONFLICT's arbiter (`infer`) sits one level down, in onConflictClause.
      if ((top || key === 'onConflictClause') && skip.has(k)) continue;
      if (repeatedSubtree(key, v as Obj, k)) continue;
      visit(c, k, false);
    }
  };
  for (const [k, c] of Object.entries(write.node)) if (!skip.has(k)) visit(c, k, false);
  return out;
}

/**
 * The edits that keep a write from computing over its target's hidden columns (DESIGN.md "Three
 * walls", wall 2: the server never computes over a hidden value; every other relation of the
 * statement is read through a masking subquery, but a write's target cannot be). Input: the write,
 * the analysis's column uses of its statement (character locations), the target `rel` and its
 * hidden columns, the tokens of the text, and `toChar` (a node's byte location to characters).
 * Each ColumnRef in a clause PostgreSQL evaluates over the target's stored row whose use resolves
 * to a hidden column of the target becomes `('*****'::text)` — the value a masking subquery would
 * have given it — so a WHERE, SET value, ON CONFLICT or MERGE condition over it tests the mask.
 * Refused 0A000 (fail closed, whichever wall is on): a whole-row reference to the target
 * (`users`, `users.*`, `ssn(users)`), and a reference that names a hidden column of the target
 * but has no analyzed use at its place (pgwarden cannot say what it binds to).
 */
export function targetReadEdits(
  write: FoundWrite,
  uses: readonly ColumnUse[],
  rel: CatalogRelation,
  hidden: ReadonlySet<string>,
  tokens: readonly Token[],
  toChar: (byte: number) => number,
): Edit[] | RewriteRefusal {
  const alias = write.target.alias as Obj | undefined;
  const refname = typeof alias?.aliasname === 'string' ? alias.aliasname : rel.name;
  const isColumn = (n: string) => rel.columns.some((c) => c.name === n);
  const onTarget = (u: ColumnUse) => u.schema === rel.schema && u.table === rel.name;
  const byLocation = new Map<number, ColumnUse[]>();
  for (const u of uses) {
    const at = byLocation.get(u.location);
    if (at) at.push(u);
    else byLocation.set(u.location, [u]);
  }
  const refuse = (what: string, location: number): RewriteRefusal => ({
    refusal: {
      sqlstate: '0A000',
      message: `${what} of table ${rel.name}, which has columns hidden from you, in a write to it is not supported`,
      hint: 'Name the visible columns.',
      ...(location >= 0 ? { location: toChar(location) } : {}),
    },
  });
  const edits: Edit[] = [];
  for (const ref of readingColumnRefs(write)) {
    const location = typeof ref.location === 'number' ? ref.location : -1;
    const f = columnRefFields(ref);
    const last = f[f.length - 1] ?? '';
    const qual = f.length >= 2 ? f[f.length - 2] : undefined;
    const at = location >= 0 ? (byLocation.get(toChar(location)) ?? []) : [];
    const couldNameTarget = f.length === 1 || qual === refname || (f.length >= 3 && qual === rel.name);
    // A bare `*` can only stand in a subquery's select list, where it expands that subquery's own
    // FROM items; `refname.*` and a bare `refname` that is no column are the target's row.
    const wholeRow =
      at.some((u) => u.use === 'whole-row' && onTarget(u)) ||
      (last === '*' && qual === refname) ||
      (f.length === 1 && last === refname && !isColumn(last));
    if (wholeRow) return refuse('A whole-row reference', location);
    const masked = at.some(
      (u) => u.use !== 'whole-row' && u.use !== 'write-target' && onTarget(u) && hidden.has(u.column),
    );
    if (!masked) {
      if (couldNameTarget && hidden.has(last) && at.length === 0)
        return refuse(`A reference to column ${last}`, location);
      continue;
    }
    const end = columnRefEnd(tokens, location, f.length);
    if (end === null) return refuse('Text pgwarden could not read in a reference', location);
    edits.push({ start: location, end, text: `(${MASK_CONSTANT})` });
  }
  return edits;
}

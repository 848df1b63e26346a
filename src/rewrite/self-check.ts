// The rewrite checks its own output: parsed again, every relation qualified, every hidden read wrapped.
import type { CatalogRelation } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
import { MASK_VALUE, SYSTEM_COLUMNS } from './masking-subquery.js';
import { returningEdits } from './returning-masks.js';
import type { RewriteContext } from './rewrite-sql.js';
import { type Token, tokenize } from './sql-tokens.js';
import { isRangeVar, isRewritten, type Obj, walkStatement } from './tree-walk.js';

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** The single String name of a ColumnRef, or undefined. */
function bareName(v: unknown): string | undefined {
  const ref = (v as Obj | undefined)?.ColumnRef as Obj | undefined;
  const fields = Array.isArray(ref?.fields) ? (ref?.fields as Obj[]) : [];
  if (fields.length !== 1) return undefined;
  const s = (fields[0]?.String as Obj | undefined)?.sval;
  return typeof s === 'string' ? s : undefined;
}

/** Whether `v` is `'*****'::text` (pg_catalog.text or text). */
function isMaskConstant(v: unknown): boolean {
  const tc = (v as Obj | undefined)?.TypeCast as Obj | undefined;
  const c = (tc?.arg as Obj | undefined)?.A_Const as Obj | undefined;
  const sval = (c?.sval as Obj | undefined)?.sval;
  const typeNames = ((tc?.typeName as Obj | undefined)?.names as Obj[] | undefined) ?? [];
  const last = (typeNames[typeNames.length - 1]?.String as Obj | undefined)?.sval;
  return sval === MASK_VALUE && last === 'text' && typeNames.length <= 2;
}

/**
 * The inner RangeVar of a masking subquery, when `sub` (a RangeSubselect's `subquery`) is exactly
 * the one masking-subquery.ts writes for that relation: `SELECT <columns in order, hidden ones as
 * the mask constant> [, system columns] FROM [ONLY] "s"."t"` and nothing else.
 */
function wrapperTarget(sub: unknown, ctx: RewriteContext): Obj | undefined {
  const s = (sub as Obj | undefined)?.SelectStmt as Obj | undefined;
  if (!s) return undefined;
  for (const k of Object.keys(s)) {
    if (!['targetList', 'fromClause', 'limitOption', 'op'].includes(k)) return undefined;
  }
  if (s.op !== 'SETOP_NONE') return undefined;
  const from = Array.isArray(s.fromClause) ? (s.fromClause as Obj[]) : [];
  const rv = from.length === 1 ? (from[0]?.RangeVar as Obj | undefined) : undefined;
  // The inner reference may carry the outer one's name as a plain alias (no column aliases).
  if (!rv?.schemaname || (rv.alias as Obj | undefined)?.colnames !== undefined) return undefined;
  const rel = ctx.catalog.relations.get(catalogKey(str(rv.schemaname), str(rv.relname)));
  if (!rel) return undefined;
  const hidden = ctx.hiddenOf(rel);
  const list = Array.isArray(s.targetList) ? (s.targetList as Obj[]) : [];
  if (list.length < rel.columns.length) return undefined;
  for (const [i, item] of list.entries()) {
    const rt = item.ResTarget as Obj | undefined;
    if (!rt) return undefined;
    const col = rel.columns[i];
    if (col === undefined) {
      const n = bareName(rt.val);
      if (rt.name !== undefined || n === undefined || !SYSTEM_COLUMNS.has(n)) return undefined;
    } else if (hidden.has(col.name)) {
      if (rt.name !== col.name || !isMaskConstant(rt.val)) return undefined;
    } else if (rt.name !== undefined || bareName(rt.val) !== col.name) return undefined;
  }
  return rv;
}

/** Every node under `v` whose key is `kind`, with its body. */
function nodesOf(v: unknown, kind: string, out: Obj[] = []): Obj[] {
  if (Array.isArray(v)) for (const x of v) nodesOf(x, kind, out);
  else if (v && typeof v === 'object') {
    for (const [k, c] of Object.entries(v as Obj)) {
      if (k === kind && c && typeof c === 'object') out.push(c as Obj);
      nodesOf(c, kind, out);
    }
  }
  return out;
}

/** The DML target RangeVars under `v` (INSERT/UPDATE/DELETE/MERGE `relation`). */
function targets(v: unknown, nodeType: string): Set<Obj> {
  const out = new Set<Obj>();
  const own = (v as Obj).relation as Obj | undefined;
  if (['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt'].includes(nodeType) && own && isRangeVar(own))
    out.add(own);
  for (const kind of ['InsertStmt', 'UpdateStmt', 'DeleteStmt', 'MergeStmt']) {
    for (const n of nodesOf(v, kind)) {
      const r = n.relation as Obj | undefined;
      if (r && isRangeVar(r)) out.add(r);
    }
  }
  return out;
}

/**
 * Checks rewritten text (issue "Mask at read": after rewriting, parse the text to be sent again
 * and verify). Output: null when every RangeVar of every rewritten statement is schema-qualified
 * or a generated CTE name, every CTE has a generated name, every read of a relation with hidden
 * columns is the inner reference of an exact masking subquery, and no RETURNING of a target with
 * hidden columns still reads one; else what failed (the caller refuses the statement, XX000).
 */
export function selfCheck(text: string, generated: ReadonlySet<string>, ctx: RewriteContext): string | null {
  const parsed = ctx.parse(text);
  if (!parsed.ok) return `the rewritten text does not parse (${parsed.refusal.message})`;
  // Lexed only for a RETURNING check: the text is not copied to bytes otherwise (issue 16 item 2).
  let tokens: Token[] | undefined;
  for (const st of parsed.parsed.statements) {
    const node = (st.node ?? {}) as Obj;
    if (!isRewritten(st.nodeType, node)) continue;
    const found = walkStatement(node, st.nodeType);
    for (const cte of found.ctes) {
      if (!generated.has(str(cte.ctename))) return `WITH query ${str(cte.ctename)} kept its name`;
    }
    const inside = new Set<Obj>();
    for (const rs of nodesOf(node, 'RangeSubselect')) {
      const rv = wrapperTarget(rs.subquery, ctx);
      if (rv) inside.add(rv);
    }
    const writes = targets(node, st.nodeType);
    const hiddenRel = (rv: Obj): CatalogRelation | undefined => {
      const rel = ctx.catalog.relations.get(catalogKey(str(rv.schemaname), str(rv.relname)));
      return rel && ctx.hiddenOf(rel).size > 0 ? rel : undefined;
    };
    for (const { node: rv } of found.rangeVars) {
      if (!rv.schemaname) {
        if (!generated.has(str(rv.relname))) return `relation ${str(rv.relname)} is not schema-qualified`;
        continue;
      }
      const rel = ctx.catalog.relations.get(catalogKey(str(rv.schemaname), str(rv.relname)));
      if (!rel) return `relation ${str(rv.schemaname)}.${str(rv.relname)} is not in the catalog`;
      if (hiddenRel(rv) && !inside.has(rv) && !writes.has(rv)) {
        return `relation ${rel.schema}.${rel.name} is read without its masking subquery`;
      }
    }
    for (const dml of found.dml) {
      const rel = hiddenRel(dml.target);
      if (!rel) continue;
      tokens ??= tokenize(Buffer.from(text, 'utf8'));
      const left = returningEdits(dml, rel, ctx.hiddenOf(rel), tokens);
      if ('refusal' in left || left.length > 0)
        return `RETURNING of ${rel.schema}.${rel.name} still reads a hidden column`;
    }
  }
  return null;
}

// RETURNING of a write target with hidden columns: references become the mask constant, stars are expanded.
import type { CatalogRelation } from '../catalog/types.js';
import type { Edit, RewriteRefusal } from './edits.js';
import { MASK_CONSTANT } from './masking-subquery.js';
import { columnRefEnd } from './relation-spans.js';
import type { Token } from './sql-tokens.js';
import { quoteIdent } from './sql-tokens.js';
import { columnRefFields, type FoundDml, type Obj } from './tree-walk.js';

/** Every ColumnRef under `v` (subqueries included: they may be correlated to the target). */
function columnRefs(v: unknown, out: Obj[] = []): Obj[] {
  if (Array.isArray(v)) for (const x of v) columnRefs(x, out);
  else if (v && typeof v === 'object') {
    for (const [k, c] of Object.entries(v as Obj)) {
      if (k === 'ColumnRef' && c && typeof c === 'object') out.push(c as Obj);
      else columnRefs(c, out);
    }
  }
  return out;
}

/**
 * The edits that mask a RETURNING list of a write into `rel` (whose columns `hidden` are hidden
 * from the caller; `refname` is the target's alias or name). A target cannot be a subquery, so
 * its RETURNING is rewritten item by item: a bare or qualified reference to a hidden column
 * becomes `'*****'::text AS "col"`; `*` and `t.*` are expanded to the target's columns with the
 * hidden ones masked. Refused 0A000 (a RewriteRefusal): a whole-row reference to the target
 * (`RETURNING users`, `to_json(users)`), an expression reading a hidden column (the analysis
 * refuses it too: a compute use), `RETURNING *` beside FROM/USING items, a reference the text
 * does not match. Source: DESIGN.md "Three walls"; issue "Mask at read", point 2.
 */
export function returningEdits(
  dml: FoundDml,
  rel: CatalogRelation,
  hidden: ReadonlySet<string>,
  tokens: readonly Token[],
): Edit[] | RewriteRefusal {
  const alias = dml.target.alias as Obj | undefined;
  const refname = typeof alias?.aliasname === 'string' ? alias.aliasname : rel.name;
  const isColumn = (n: string) => rel.columns.some((c) => c.name === n);
  const refuse = (what: string, location: number): RewriteRefusal => ({
    refusal: {
      sqlstate: '0A000',
      message: `RETURNING ${what} of table ${rel.name}, which has columns hidden from you, is not supported`,
      hint: 'Name the visible columns in RETURNING.',
      ...(location >= 0 ? { location } : {}),
    },
  });
  const edits: Edit[] = [];
  const expand = (qualifier: string | null) =>
    rel.columns
      .map((c) =>
        hidden.has(c.name)
          ? `${MASK_CONSTANT} AS ${quoteIdent(c.name)}`
          : qualifier
            ? `${quoteIdent(qualifier)}.${quoteIdent(c.name)}`
            : quoteIdent(c.name),
      )
      .join(', ');
  for (const item of dml.node.returningList as Obj[]) {
    const rt = (item.ResTarget ?? {}) as Obj;
    const named = typeof rt.name === 'string';
    const val = rt.val as Obj | undefined;
    const ref = val?.ColumnRef as Obj | undefined;
    const location = typeof ref?.location === 'number' ? ref.location : -1;
    if (ref) {
      const f = columnRefFields(ref);
      const last = f[f.length - 1];
      const qual = f.length >= 2 ? f[f.length - 2] : undefined;
      const onTarget = f.length === 1 || (f.length === 2 && qual === refname);
      if (f.length > 2 && qual === rel.name) return refuse('with a schema-qualified column', location);
      if (onTarget && last === '*') {
        if (f.length === 1 && dml.otherItems) return refuse('* with FROM or USING items', location);
        const end = columnRefEnd(tokens, location, f.length);
        if (end === null) return refuse('text pgwarden could not read', location);
        edits.push({ start: location, end, text: expand(f.length === 2 ? refname : null) });
        continue;
      }
      if (onTarget && last !== undefined && hidden.has(last)) {
        const end = columnRefEnd(tokens, location, f.length);
        if (end === null) return refuse('text pgwarden could not read', location);
        edits.push({
          start: location,
          end,
          text: named ? MASK_CONSTANT : `${MASK_CONSTANT} AS ${quoteIdent(last)}`,
        });
        continue;
      }
      if (f.length === 1 && last === refname && !isColumn(last)) return refuse('of a whole row', location);
      if (f.length === 2 && qual === refname && last !== undefined && !isColumn(last) && last !== '*') {
        return refuse(`of ${refname}.${last}`, location);
      }
      continue;
    }
    for (const inner of columnRefs(val)) {
      const f = columnRefFields(inner);
      const last = f[f.length - 1] ?? '';
      const at = typeof inner.location === 'number' ? inner.location : -1;
      const qual = f.length >= 2 ? f[f.length - 2] : undefined;
      const wholeRow =
        (last === '*' && (f.length === 1 || qual === refname)) ||
        (f.length === 1 && last === refname && !isColumn(last)) ||
        (f.length === 2 && qual === refname && !isColumn(last));
      if (hidden.has(last) || wholeRow) {
        return refuse('of an expression over a hidden column or a whole row', at);
      }
    }
  }
  return edits;
}

// Mask at read: the text sent upstream, with every relation qualified, CTEs renamed and hidden columns masked at the source.
import { randomBytes } from 'node:crypto';
import type { Catalog, CatalogRelation } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
import { MAX_CACHED_TEXT } from '../sql/analysis-cache.js';
import type { AnalysisRefusal, RelationBinding, StatementAnalysis } from '../sql/analysis-types.js';
import type { ParseOutcome } from '../sql/parser.js';
import { applyEdits, type Edit, type PositionMap, type RewriteRefusal } from './edits.js';
import { maskingSubquery, qualifiedName } from './masking-subquery.js';
import { fromItemSpan, nameTokens } from './relation-spans.js';
import { returningEdits } from './returning-masks.js';
import { selfCheck } from './self-check.js';
import { LexError, type Token, tokenAt, tokenize } from './sql-tokens.js';
import { targetReadEdits } from './target-reads.js';
import { type FoundRangeVar, isRewritten, type Obj, walkStatement } from './tree-walk.js';

/** What the rewrite needs: the catalog, the caller's hidden columns per relation, and the parser. */
export interface RewriteContext {
  readonly catalog: Catalog;
  /**
   * The columns of `rel` hidden from the caller, by name: no SEE, or carrying a hidden column's
   * rows (a view or materialized view column whose lineage reaches one, an inheritance relative's
   * column, a column of a hidden row type, a generated column over one). Empty: none.
   */
  readonly hiddenOf: (rel: CatalogRelation) => ReadonlySet<string>;
  /** The server major's parser (the rewritten text is parsed again and checked). */
  readonly parse: (sql: string) => ParseOutcome;
  /**
   * The UTF-8 bytes of the text when the caller has them (a message's payload): the rewrite edits
   * them instead of a copy (used only when their length is the text's UTF-8 length).
   */
  readonly utf8?: Buffer;
}

/** The UTF-8 bytes of rewrites of texts too long for the rewrite cache (MAX_CACHED_TEXT), by result. */
const sentBytes = new WeakMap<RewrittenSql, Buffer>();

/**
 * The UTF-8 bytes of a long rewritten text as the rewrite made them, for sending without encoding
 * the text again (issue 16 item 2: a 60 MB statement was held once more as the message sent);
 * undefined for a text the rewrite cache may keep (they would be held with it), and for any other RewrittenSql value (a copy or a reuse for another
 * text has none: the bytes belong to this value's text alone).
 */
export function sentUtf8(r: RewrittenSql): Buffer | undefined {
  return sentBytes.get(r);
}

/** The text to send for a SQL string, and how to translate errors about it back. */
export interface RewrittenSql {
  readonly text: string;
  /** False when the text is the caller's, byte for byte. */
  readonly changed: boolean;
  /** Maps a POSITION of the sent text to the caller's (null: unchanged text). */
  readonly positions: PositionMap | null;
  /** Generated CTE names and the caller's names for them (for error messages). */
  readonly names: ReadonlyMap<string, string>;
  /** The byte edits made to the caller's text (reapplied to a text with the same lexical key). */
  readonly edits: readonly Edit[];
}

function refused(message: string, location?: number, sqlstate = '0A000'): RewriteRefusal {
  const refusal: AnalysisRefusal = {
    sqlstate,
    message,
    ...(location !== undefined && location >= 0 ? { location } : {}),
  };
  return { refusal };
}

/**
 * A nonce that does not occur in `sql` in any letter case, for generated names nobody's text can
 * already use. Searched case-insensitively in place: a lower-cased copy of a 60 MB statement was
 * 60 MB more held outside the memory budget (issue 16 item 2).
 */
function nonceFor(sql: string): string {
  for (;;) {
    const n = randomBytes(4).toString('hex');
    if (!new RegExp(n, 'i').test(sql)) return n;
  }
}

function byLocation<T extends { readonly location: number }>(xs: readonly T[]): T[] {
  return [...xs].sort((a, b) => a.location - b.location);
}

/**
 * Rewrites a SQL string for a caller with hidden columns (DESIGN.md "Three walls", wall 2; issue
 * "Mask at read"). Input: the text, the analysis of each of its statements (their bindings: what
 * each RangeVar was bound to), and the context. For each row statement and each statement holding
 * a query (EXPLAIN, PREPARE, DECLARE, CREATE TABLE AS, COPY (query)):
 * - every relation reference is schema-qualified, so Postgres binds exactly what was decided,
 *   whatever the search_path at EXECUTE time or a decoy created or dropped since;
 * - every CTE is renamed to a generated name with every reference bound to it (an unaliased
 *   reference keeps its name as alias), so a name can bind to the CTE pgwarden decided or to
 *   nothing;
 * - every read of a relation with hidden columns becomes a masking subquery;
 * - RETURNING of a write target with hidden columns masks them (returning-masks.ts), and every
 *   clause that reads the target's stored row (WHERE, SET values, ON CONFLICT, MERGE conditions)
 *   reads its hidden columns as the mask constant (target-reads.ts).
 * The result is parsed again and checked (self-check.ts). Other statements are sent as written.
 * Output: the text, or a refusal: 0A000 for a construct that cannot be wrapped without changing
 * its meaning (TABLESAMPLE, a schema-qualified column reference, a system column beside a star
 * on a wrapped relation), XX000 when the self-check fails (a defect, logged by the caller).
 * Bindings are matched to RangeVars by order of appearance, never by byte offset: an analysis
 * may be shared by texts that differ in their literals.
 */
export function rewriteSql(
  sql: string,
  statements: readonly StatementAnalysis[],
  ctx: RewriteContext,
): RewrittenSql | RewriteRefusal {
  const parsed = ctx.parse(sql);
  if (!parsed.ok) return { refusal: parsed.refusal };
  const names = new Map<string, string>();
  const edits: Edit[] = [];
  const stmts = parsed.parsed.statements;
  if (stmts.length !== statements.length)
    return refused('pgwarden could not match the statements it analyzed');
  const walked = stmts.map((st) => {
    const node = (st.node ?? {}) as Obj;
    return isRewritten(st.nodeType, node) ? walkStatement(node, st.nodeType) : undefined;
  });
  // Nothing names a relation or a CTE: nothing to edit, and the text is neither copied to bytes
  // nor lexed (a 60 MB literal cost two copies outside the memory budget, issue 16 item 2).
  if (!walked.some((f) => f && (f.rangeVars.length > 0 || f.ctes.length > 0)))
    return { text: sql, changed: false, positions: null, names, edits };
  const given = ctx.utf8;
  const bytes =
    given !== undefined && given.length === Buffer.byteLength(sql, 'utf8') ? given : Buffer.from(sql, 'utf8');
  let tokens: Token[];
  try {
    tokens = tokenize(bytes);
  } catch (e) {
    if (e instanceof LexError) return refused(`pgwarden could not read this statement: ${e.message}`);
    throw e;
  }
  const nonce = nonceFor(sql);
  let cteCount = 0;
  for (const [i, found] of walked.entries()) {
    if (!found) continue;
    const analysis = statements[i] as StatementAnalysis;
    const bindings = byLocation(analysis.bindings?.relations ?? []);
    const rangeVars = byLocation(found.rangeVars);
    if (bindings.length !== rangeVars.length) {
      return refused(
        `pgwarden could not rewrite this statement: ${rangeVars.length} relation references, ${bindings.length} analyzed`,
      );
    }
    // CTE definitions: generated names, matched by order too.
    const defs = byLocation(analysis.bindings?.ctes ?? []);
    const cteNodes = [...found.ctes].sort((a, b) => num(a.location) - num(b.location));
    if (defs.length !== cteNodes.length)
      return refused('pgwarden could not rewrite the WITH clauses of this statement');
    const genOf = new Map<number, string>();
    for (const [k, def] of defs.entries()) {
      const cte = cteNodes[k] as Obj;
      if (cte.ctename !== def.name)
        return refused('pgwarden could not rewrite the WITH clauses of this statement');
      const gen = `pgw_${nonce}_${cteCount++}`;
      names.set(gen, def.name);
      genOf.set(def.location, gen);
      const t = tokenAt(tokens, num(cte.location));
      const tok = tokens[t];
      if (!tok || (tok.kind !== 'ident' && tok.kind !== 'qident') || tok.text !== def.name) {
        return refused(`pgwarden could not rewrite WITH query "${def.name}"`, num(cte.location));
      }
      edits.push({ start: tok.start, end: tok.end, text: gen });
    }
    const wrapped: CatalogRelation[] = [];
    const targetBinding = new Map<Obj, RelationBinding>();
    for (const [k, rv] of rangeVars.entries()) {
      const b = bindings[k] as RelationBinding;
      const r = rewriteRangeVar(rv, b, tokens, genOf, found.systemColumns, ctx);
      if ('refusal' in r) return r;
      edits.push(...r.edits);
      if (r.wrapped) wrapped.push(r.wrapped);
      targetBinding.set(rv.node, b);
    }
    if (wrapped.length > 0 && found.star && found.systemColumns.size > 0) {
      return refused(
        `system column ${[...found.systemColumns][0]} beside * on a relation with columns hidden from you is not supported: list the columns`,
      );
    }
    for (const [s, t] of found.qualifiedColumnRefs) {
      if (wrapped.some((w) => w.schema === s && w.name === t)) {
        return refused(
          `a schema-qualified column reference to ${s}.${t}, which has columns hidden from you, is not supported: write ${t}.column`,
        );
      }
    }
    // A write's target with hidden columns: its RETURNING masked, its reads of the stored row too.
    const targetOf = (
      target: Obj,
    ): { rel: CatalogRelation; hidden: ReadonlySet<string> } | RewriteRefusal | null => {
      const b = targetBinding.get(target);
      if (b?.kind !== 'relation') return null;
      const rel = ctx.catalog.relations.get(catalogKey(b.schema, b.name));
      if (!rel) return refused(`relation ${b.schema}.${b.name} is not in pgwarden's catalog`);
      const hidden = ctx.hiddenOf(rel);
      return hidden.size === 0 ? null : { rel, hidden };
    };
    for (const dml of found.dml) {
      const t = targetOf(dml.target);
      if (t === null) continue;
      if ('refusal' in t) return t;
      const r = returningEdits(dml, t.rel, t.hidden, tokens);
      if ('refusal' in r) return r;
      edits.push(...r);
    }
    for (const write of found.writes) {
      const t = targetOf(write.target);
      if (t === null) continue;
      if ('refusal' in t) return t;
      const r = targetReadEdits(write, analysis.uses, t.rel, t.hidden, tokens, (byte) =>
        parsed.parsed.offsets.toChar(byte),
      );
      if ('refusal' in r) return r;
      edits.push(...r);
    }
  }
  if (edits.length === 0) return { text: sql, changed: false, positions: null, names, edits };
  const out = applyEdits(bytes, edits);
  if (!out)
    return refused('pgwarden could not rewrite this statement (overlapping references)', undefined, 'XX000');
  const problem = selfCheck(out.text, new Set(names.keys()), ctx);
  if (problem)
    return refused(`pgwarden refused a rewrite it could not verify: ${problem}`, undefined, 'XX000');
  const result: RewrittenSql = { text: out.text, changed: true, positions: out.positions, names, edits };
  if (sql.length > MAX_CACHED_TEXT) sentBytes.set(result, out.bytes);
  return result;
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : -1;
}

/** The edits for one RangeVar: a generated CTE name, a qualified name, or a masking subquery. */
function rewriteRangeVar(
  rv: FoundRangeVar,
  b: RelationBinding,
  tokens: readonly Token[],
  genOf: ReadonlyMap<number, string>,
  system: ReadonlySet<string>,
  ctx: RewriteContext,
): { edits: Edit[]; wrapped: CatalogRelation | null } | RewriteRefusal {
  const n = rv.node;
  const relname = typeof n.relname === 'string' ? n.relname : '';
  const schemaname = typeof n.schemaname === 'string' && n.schemaname ? n.schemaname : null;
  const parts = schemaname ? [schemaname, relname] : [relname];
  const span = nameTokens(tokens, rv.location, parts);
  const cannot = refused(`pgwarden could not rewrite the reference to ${parts.join('.')}`, rv.location);
  if (!span) return cannot;
  const nameSpan = { start: (tokens[span.first] as Token).start, end: (tokens[span.last] as Token).end };
  const aliased = n.alias !== undefined;
  if (b.kind === 'cte') {
    const gen = genOf.get(b.definition);
    if (!gen || schemaname) return cannot;
    return { edits: [{ ...nameSpan, text: aliased ? gen : `${gen} AS ${quote(relname)}` }], wrapped: null };
  }
  if (b.name !== relname || (schemaname !== null && schemaname !== b.schema)) return cannot;
  const rel = ctx.catalog.relations.get(catalogKey(b.schema, b.name));
  if (!rel) return cannot;
  const hidden = b.target ? new Set<string>() : ctx.hiddenOf(rel);
  if (hidden.size === 0)
    return { edits: [{ ...nameSpan, text: qualifiedName(rel.schema, rel.name) }], wrapped: null };
  if (rv.sampled) {
    return refused(
      `TABLESAMPLE on ${rel.schema}.${rel.name}, which has columns hidden from you, is not supported`,
      rv.location,
    );
  }
  const item = fromItemSpan(tokens, span.first, span.last, n.inh === true);
  if (!item) return cannot;
  const text = maskingSubquery(rel, hidden, {
    only: item.only,
    aliased,
    refname:
      typeof (n.alias as { aliasname?: unknown } | undefined)?.aliasname === 'string'
        ? (n.alias as { aliasname: string }).aliasname
        : rel.name,
    system: [...system],
  });
  const edits: Edit[] = [{ ...item.span, text }];
  if (item.tableKeyword) edits.push({ ...item.tableKeyword, text: 'SELECT * FROM' });
  return { edits, wrapped: rel };
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

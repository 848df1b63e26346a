// Rewritten texts, cached per decision and text: a cache hit never rewrites again.
import { LRUCache } from 'lru-cache';
import type { Decision } from '../policy/decision-types.js';
import { MAX_CACHED_TEXT } from '../sql/analysis-cache.js';
import { lexicalKey } from '../sql/lexical-key.js';
import { applyEdits, type Edit, type RewriteRefusal } from './edits.js';
import type { RewrittenSql } from './rewrite-sql.js';

const ids = new WeakMap<Decision, number>();
let nextId = 1;

function idOf(d: Decision): number {
  let id = ids.get(d);
  if (id === undefined) {
    id = nextId++;
    ids.set(d, id);
  }
  return id;
}

/**
 * The rewrite of `sql` made from `shape`, the rewrite of a text with the same lexical key
 * (sql/lexical-key.ts: the same parse tree, every offset the same, only literal values of the same
 * length differ) under the same decision: its byte edits (names, never literals) applied to
 * `sql`. Undefined when they do not apply (the caller rewrites from scratch: fail closed).
 */
export function rewrittenFor(shape: RewrittenSql, sql: string): RewrittenSql | undefined {
  if (!shape.changed) return { ...shape, text: sql };
  // An ASCII text (every text with a lexical key is): byte offsets are string offsets, and the
  // edits are spliced into the string without encoding it (issue 18: the masked user's pgbench
  // statement, a new literal per execution). The positions are the shape's: the same edits at
  // the same offsets of a text of the same length.
  if (Buffer.byteLength(sql, 'utf8') === sql.length) {
    const edits = editsInOrder(shape);
    const last = edits?.[edits.length - 1];
    if (!edits || (last !== undefined && last.end > sql.length)) return undefined;
    let text = '';
    let at = 0;
    for (const e of edits) {
      text += sql.slice(at, e.start) + e.text;
      at = e.end;
    }
    return { ...shape, text: text + sql.slice(at) };
  }
  const applied = applyEdits(Buffer.from(sql, 'utf8'), shape.edits);
  return applied ? { ...shape, text: applied.text } : undefined;
}

/** A shape's edits sorted by offset, once per shape; null when two overlap (as applyEdits refuses them). */
const orderedEdits = new WeakMap<RewrittenSql, readonly Edit[] | null>();

function editsInOrder(shape: RewrittenSql): readonly Edit[] | null {
  let edits = orderedEdits.get(shape);
  if (edits === undefined) {
    const sorted = [...shape.edits].sort((a, b) => a.start - b.start || a.end - b.end);
    let at = 0;
    let ok = true;
    for (const e of sorted) {
      if (e.start < at || e.end < e.start) ok = false;
      at = e.end;
    }
    edits = ok ? sorted : null;
    orderedEdits.set(shape, edits);
  }
  return edits;
}

/**
 * Memoizes rewriteSql() by (decision, SQL text). A Decision object stands for exactly one
 * (analysis, roles, policy version, database, connection, catalog version) — the decision cache
 * hands out the same object for the same key —, and the hidden columns the rewrite masks come
 * from it; the text is part of the key because an analysis may be shared by texts that differ in
 * their literals. A text with the same lexical key as one rewritten before (sql/lexical-key.ts:
 * printable ASCII, only literal values of the same length differ, so the parse tree and every
 * offset are the same) reuses its edits without parsing: the edits touch names, never literals.
 * Bounded (LRU, default 10 000 entries and 64 MiB each, counting the key and the rewritten text);
 * a text longer than {@link MAX_CACHED_TEXT} is rewritten without the cache.
 */
export class RewriteCache {
  private readonly lru: LRUCache<string, RewrittenSql | RewriteRefusal>;
  private readonly lexical: LRUCache<string, RewrittenSql>;

  /** Input: the most entries and the most bytes (keys and texts, 2 bytes a code unit) each LRU holds. */
  constructor(max = 10_000, maxBytes = 64 << 20) {
    const sized = {
      max,
      maxSize: maxBytes,
      maxEntrySize: Math.max(1, Math.floor(maxBytes / 16)),
      sizeCalculation: (v: RewrittenSql | RewriteRefusal, key: string) =>
        2 * (key.length + ('text' in v ? v.text.length : 0)) + 512,
    };
    this.lru = new LRUCache<string, RewrittenSql | RewriteRefusal>(sized);
    this.lexical = new LRUCache<string, RewrittenSql>(sized);
  }

  /** The cached result for (decision, sql), or `make()`'s, stored. */
  get(
    decision: Decision,
    sql: string,
    make: () => RewrittenSql | RewriteRefusal,
  ): RewrittenSql | RewriteRefusal {
    if (sql.length > MAX_CACHED_TEXT) return make();
    const id = idOf(decision);
    const key = `${id}\0${sql}`;
    const hit = this.lru.get(key);
    if (hit) return hit;
    const lex = lexicalKey(sql);
    const lexKey = lex === null ? null : `${id}\0${lex}`;
    const shape = lexKey === null ? undefined : this.lexical.get(lexKey);
    let out: RewrittenSql | RewriteRefusal | undefined = shape ? rewrittenFor(shape, sql) : undefined;
    if (!out) {
      out = make();
      if (lexKey !== null && !('refusal' in out)) this.lexical.set(lexKey, out);
    }
    this.lru.set(key, out);
    return out;
  }
}

// Rewritten texts, cached per decision and text: a cache hit never rewrites again.
import { LRUCache } from 'lru-cache';
import type { Decision } from '../policy/decision-types.js';
import type { RewriteRefusal } from './edits.js';
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
 * Memoizes rewriteSql() by (decision, SQL text). A Decision object stands for exactly one
 * (analysis, roles, policy version, database, connection, catalog version) — the decision cache
 * hands out the same object for the same key —, and the hidden columns the rewrite masks come
 * from it; the text is part of the key because an analysis may be shared by texts that differ in
 * their literals. Bounded (LRU, default 10 000 entries).
 */
export class RewriteCache {
  private readonly lru: LRUCache<string, RewrittenSql | RewriteRefusal>;

  constructor(max = 10_000) {
    this.lru = new LRUCache({ max });
  }

  /** The cached result for (decision, sql), or `make()`'s, stored. */
  get(
    decision: Decision,
    sql: string,
    make: () => RewrittenSql | RewriteRefusal,
  ): RewrittenSql | RewriteRefusal {
    const key = `${idOf(decision)}\0${sql}`;
    const hit = this.lru.get(key);
    if (hit) return hit;
    const out = make();
    this.lru.set(key, out);
    return out;
  }
}

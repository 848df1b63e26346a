// A cache of decisions per (analysis, role set, policy version, database, connection, catalog version).
import { LRUCache } from 'lru-cache';
import type { Analysis } from '../sql/analysis-types.js';
import { decide } from './decide.js';
import type { DecideContext } from './decide-context.js';
import type { Decision } from './decision-types.js';
import { policyVersion } from './policy-version.js';
import { wallSwitches } from './wall-switches.js';

const analysisIds = new WeakMap<Analysis, number>();
let nextAnalysisId = 1;

/** A process-unique id for an Analysis object (the analysis cache hands out the same object for a hit). */
function analysisId(a: Analysis): number {
  let id = analysisIds.get(a);
  if (id === undefined) {
    id = nextAnalysisId++;
    analysisIds.set(a, id);
  }
  return id;
}

/** Options of {@link DecisionCache}. */
export interface DecisionCacheOptions {
  /** Most decisions kept; default 10 000. */
  readonly max?: number;
}

/**
 * Memoizes {@link decide}. The key is the Analysis object's identity, the sorted set of roles, the
 * policy version ({@link policyVersion}: a reload makes a new Config, hence a new version), the
 * database, the connection kind, the catalog version and the SEE switch, so a cached decision is served only for
 * exactly what it was made for. Source: issue 4, "Decisions are cached per (analysis, role set,
 * policy version); a reload bumps the version". Never throws.
 */
export class DecisionCache {
  private readonly lru: LRUCache<string, Decision>;
  private hits = 0;
  private misses = 0;

  constructor(opts: DecisionCacheOptions = {}) {
    this.lru = new LRUCache({ max: opts.max ?? 10_000 });
  }

  /** The decision for (analysis, roles, ctx), from the cache or made now by {@link decide}. */
  decide(analysis: Analysis, roles: readonly string[], given: DecideContext): Decision {
    // A test that turned the SEE checks off (wall-switches.ts) gets decisions made without them.
    const w = wallSwitches();
    const ctx = {
      ...given,
      ...(w.seeChecks && given.seeChecks !== false ? {} : { seeChecks: false }),
      ...(w.rewrite && given.rewrite !== false ? {} : { rewrite: false }),
    };
    const sorted = [...new Set(roles)].sort();
    const key = [
      analysisId(analysis),
      sorted.join(','),
      policyVersion(ctx.config),
      ctx.database,
      ctx.connection,
      ctx.catalog.version,
      ctx.seeChecks === false ? 'see-off' : 'see-on',
      ctx.rewrite === false ? 'rewrite-off' : 'rewrite-on',
    ].join('\0');
    const hit = this.lru.get(key);
    if (hit) {
      this.hits++;
      return hit;
    }
    this.misses++;
    const d = decide(analysis, sorted, ctx);
    this.lru.set(key, d);
    return d;
  }

  /** Lookups since creation: served from the cache (`hits`) or decided (`misses`), for metrics. */
  stats(): { hits: number; misses: number } {
    return { hits: this.hits, misses: this.misses };
  }

  /** Number of decisions held (for tests and metrics). */
  get size(): number {
    return this.lru.size;
  }
}

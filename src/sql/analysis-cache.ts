// An LRU of analyses keyed on (text, search paths, catalog), backed by a second LRU keyed on normalized text.

import { LRUCache } from 'lru-cache';
import type { Catalog } from '../catalog/types.js';
import type { Analysis } from './analysis-types.js';
import { type AnalyzeOptions, parserFor } from './analyze-sql.js';
import { lexicalKey } from './lexical-key.js';
import { normalizedKey } from './normalize.js';
import type { ParseLimits } from './parser.js';
import type { QueryAnalyzer } from './query-analyzer.js';
import { analyzeParsed } from './statement-analyzer.js';

/** Sizes of the LRUs (entries, and bytes: keys and an estimate of each analysis) and the parse bound. */
export interface AnalysisCacheOptions {
  readonly maxEntries?: number;
  readonly maxNormalizedEntries?: number;
  /** Bytes each LRU may hold (its keys' lengths plus {@link analysisBytes} per entry); default 64 MiB. */
  readonly maxBytes?: number;
  /** The parse bound (PgParser.parse's `maxParsedBytes`, limits.max_analysis_bytes); default none. */
  readonly maxAnalysisBytes?: number;
}

/**
 * Texts longer than this (code units) are analyzed without the cache: neither looked up nor
 * stored, so that one huge statement neither evicts the working set nor stays in memory.
 */
export const MAX_CACHED_TEXT = 64 * 1024;

/**
 * The bytes an LRU entry is counted for: its key (two bytes a code unit at worst) and an estimate
 * of the analysis, which grows with the text it was made from (about 2 KiB for a short statement).
 */
function entryBytes(key: string): number {
  return key.length * 4 + 2048;
}

/** Counters since creation: exact-text hits, normalized-text hits, full analyses. */
export interface AnalysisCacheStats {
  readonly hits: number;
  readonly normalizedHits: number;
  readonly misses: number;
}

/**
 * True when a normalized key blanked every literal (none was kept verbatim because the analysis
 * reads it: an ordinal, a reg* cast, a function argument), so that any value may share it.
 */
function allLiteralsBlanked(normalized: string | null): boolean {
  return normalized !== null && !normalized.includes('A_Const:{');
}

/**
 * Caches analyses (DESIGN.md: `Analysis` depends only on SQL text, search_path and catalog
 * version). Two levels:
 * 1. exact text + every search path of the options + parser major + catalog: no parsing on a hit;
 * 2. normalized text (normalize.ts: literals blanked where no analysis reads them) + the same
 *    state: the string is parsed, the analysis is shared. Only analyses of row statements without
 *    session effects or refusals are stored there, so `pgbench -S`'s `… WHERE aid = 48213` with a
 *    new literal each time is analyzed once per literal length;
 * 3. the lexical key (lexical-key.ts: a plain text with its literals' characters marked) for the
 *    analyses of level 2 whose normalized key kept no literal value: a hit there is not parsed at
 *    all (counted in `hits`).
 * The catalog enters the key by identity (one id per Catalog value, and a refresh makes a new
 * value), so one cache may serve several databases. Analyses are immutable values shared between
 * callers: do not mutate them.
 */
export class AnalysisCache {
  private readonly exact: LRUCache<string, Analysis>;
  private readonly normalized: LRUCache<string, Analysis>;
  /** Keyed by lexicalKey(): only analyses whose normalized key kept no literal value. */
  private readonly lexical: LRUCache<string, Analysis>;
  /** Every analysis ever stored in `lexical`: it holds for any text of its lexical key. */
  private readonly literalFree = new WeakSet<Analysis>();
  private readonly catalogIds = new WeakMap<Catalog, number>();
  private nextCatalogId = 1;
  private hits = 0;
  private normalizedHits = 0;
  private misses = 0;

  /** Input: the query analysis to run on misses, and the LRU sizes (default 10 000 each). */
  constructor(
    private readonly analyzeQuery: QueryAnalyzer,
    options: AnalysisCacheOptions = {},
  ) {
    const maxSize = options.maxBytes ?? 64 << 20;
    const sized = (max: number) => ({
      max,
      maxSize,
      maxEntrySize: Math.max(1, Math.floor(maxSize / 16)),
      sizeCalculation: (_v: Analysis, key: string) => entryBytes(key),
    });
    this.exact = new LRUCache(sized(options.maxEntries ?? 10_000));
    this.normalized = new LRUCache(sized(options.maxNormalizedEntries ?? 10_000));
    this.lexical = new LRUCache(sized(options.maxNormalizedEntries ?? 10_000));
    this.limits = options.maxAnalysisBytes !== undefined ? { maxParsedBytes: options.maxAnalysisBytes } : {};
  }

  /**
   * Whether `a` (an analysis this cache returned) holds for every text with the same lexical key
   * under the same options (sql/lexical-key.ts): its normalized key blanked every literal.
   */
  sharedByLiterals(a: Analysis): boolean {
    return this.literalFree.has(a);
  }

  private readonly limits: ParseLimits;

  /** The counters so far. */
  stats(): AnalysisCacheStats {
    return { hits: this.hits, normalizedHits: this.normalizedHits, misses: this.misses };
  }

  private stateKey(opts: AnalyzeOptions, major: number): string {
    let id = this.catalogIds.get(opts.catalog);
    if (id === undefined) {
      id = this.nextCatalogId++;
      this.catalogIds.set(opts.catalog, id);
    }
    const paths = [
      opts.searchPath,
      opts.sessionSearchPath,
      opts.transactionStartSearchPath,
      opts.resetSearchPath,
    ];
    return `${major}\u0001${id}\u0001${opts.catalog.version}\u0001${JSON.stringify(paths)}\u0001`;
  }

  /**
   * analyze() through the cache: same inputs, outputs and refusals as analyzeSql (analyze-sql.ts).
   * Never throws.
   */
  analyze(sql: string, opts: AnalyzeOptions): Analysis {
    const parser = parserFor(opts);
    if (!('parse' in parser)) return parser;
    if (sql.length > MAX_CACHED_TEXT) {
      this.misses++;
      const outcome = parser.parse(sql, this.limits);
      if (!outcome.ok) return { statements: [], refusal: outcome.refusal };
      return analyzeParsed(outcome.parsed, opts.catalog, opts, this.analyzeQuery);
    }
    const state = this.stateKey(opts, parser.major);
    const exactKey = state + sql;
    const hit = this.exact.get(exactKey);
    if (hit) {
      this.hits++;
      return hit;
    }
    // Same text but for the values of literals of the same kind and length: no parse at all.
    const lex = lexicalKey(sql);
    const lexKey = lex === null ? null : state + lex;
    if (lexKey !== null) {
      const shared = this.lexical.get(lexKey);
      if (shared) {
        this.hits++;
        this.exact.set(exactKey, shared);
        return shared;
      }
    }
    const outcome = parser.parse(sql, this.limits);
    if (!outcome.ok) {
      const refused: Analysis = { statements: [], refusal: outcome.refusal };
      this.misses++;
      this.exact.set(exactKey, refused);
      return refused;
    }
    const norm = normalizedKey(outcome.parsed);
    const normKey = norm === null ? null : state + norm;
    if (normKey !== null) {
      const shared = this.normalized.get(normKey);
      if (shared) {
        this.normalizedHits++;
        this.exact.set(exactKey, shared);
        if (lexKey !== null && allLiteralsBlanked(norm)) this.shareLexically(lexKey, shared);
        return shared;
      }
    }
    this.misses++;
    const analysis = analyzeParsed(outcome.parsed, opts.catalog, opts, this.analyzeQuery);
    this.exact.set(exactKey, analysis);
    const shareable =
      normKey !== null &&
      analysis.refusal === undefined &&
      analysis.statements.every((s) => s.sessionEffects.length === 0 && s.refusal === undefined);
    if (shareable) {
      this.normalized.set(normKey, analysis);
      if (lexKey !== null && allLiteralsBlanked(norm)) this.shareLexically(lexKey, analysis);
    }
    return analysis;
  }

  private shareLexically(key: string, a: Analysis): void {
    this.lexical.set(key, a);
    this.literalFree.add(a);
  }
}

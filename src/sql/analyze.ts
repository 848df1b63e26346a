// The entry point of sql/: analyze(text, { catalog, searchPath }) → Analysis, with the real query analysis bound in.

import { AnalysisCache, type AnalysisCacheOptions } from './analysis-cache.js';
import type { Analysis } from './analysis-types.js';
import { type AnalyzeOptions, analyzeSql } from './analyze-sql.js';
import { analyzeQuery } from './query/analyze-query.js';

export { AnalysisCache } from './analysis-cache.js';
export type { AnalyzeOptions } from './analyze-sql.js';
export { loadParser, ParserUnavailableError, supportedParserMajors } from './parser.js';

/**
 * Analyzes a SQL string (DESIGN.md "Analysis"). Input: the text as the client sent it (one or more
 * statements), the catalog, the session's search_path (and, optionally, the paths COMMIT, ROLLBACK
 * and RESET return to), and optionally the parser (default: the loaded parser of the catalog's
 * server major — `await loadParser(15)` first). Output: one StatementAnalysis per statement, in
 * order, each analyzed under the state the previous ones leave; `refusal` is the first refusal.
 * Errors (as refusals, never thrown): 42601 syntax error (with the character position), 22021
 * malformed text, 0A000 no parser for the server major or no rule for a construct, and the query
 * analysis's 42P01 / 42703 / 42702 / 42883. Uncached: use {@link createAnalysisCache} in the proxy.
 */
export function analyze(sql: string, opts: AnalyzeOptions): Analysis {
  return analyzeSql(sql, opts, analyzeQuery);
}

/** A cache of analyze() results (analysis-cache.ts), bound to the real query analysis. */
export function createAnalysisCache(options?: AnalysisCacheOptions): AnalysisCache {
  return new AnalysisCache(analyzeQuery, options);
}

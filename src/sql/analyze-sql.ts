// Parse and analyze one SQL string with a given query analysis (the dependency analyze.ts binds).

import type { Catalog } from '../catalog/types.js';
import type { Analysis } from './analysis-types.js';
import { loadedParser, majorOfServerVersion, ParserUnavailableError, type PgParser } from './parser.js';
import type { QueryAnalyzer } from './query-analyzer.js';
import { analyzeParsed, type SessionPaths } from './statement-analyzer.js';

/** Options of analyze(): the catalog, the session's search paths, and optionally the parser. */
export interface AnalyzeOptions extends SessionPaths {
  readonly catalog: Catalog;
  /**
   * The parser to use; defaults to the loaded parser of the catalog's server major
   * (`await loadParser(major)` once at start-up or connect).
   */
  readonly parser?: PgParser;
}

/**
 * The parser for `opts`, or the refusal when none is loaded for the server's major (0A000).
 * Source: DESIGN.md "Parsing" — the parser's major matches the upstream server's.
 */
export function parserFor(opts: AnalyzeOptions): PgParser | Analysis {
  if (opts.parser) return opts.parser;
  const major = majorOfServerVersion(opts.catalog.serverVersionNum);
  const parser = loadedParser(major);
  if (parser) return parser;
  return {
    statements: [],
    refusal: { sqlstate: '0A000', message: new ParserUnavailableError(major).message },
  };
}

/**
 * Parses `sql` with the server's grammar and analyzes its statements in order (statement-analyzer.ts).
 * Output: the Analysis. Refusals: 42601 (syntax, with the character position), 22021, 0A000
 * (no parser for the server major; no rule for a node type), and whatever the statements raise.
 * Never throws.
 */
export function analyzeSql(sql: string, opts: AnalyzeOptions, analyzeQuery: QueryAnalyzer): Analysis {
  const parser = parserFor(opts);
  if (!('parse' in parser)) return parser;
  const outcome = parser.parse(sql);
  if (!outcome.ok) return { statements: [], refusal: outcome.refusal };
  return analyzeParsed(outcome.parsed, opts.catalog, opts, analyzeQuery);
}

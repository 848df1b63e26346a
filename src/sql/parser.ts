// The PostgreSQL grammar of the upstream server's major version (libpg-query), and statement splitting.

import type { AnalysisRefusal } from './analysis-types.js';
import { type Elision, elideLongLiterals, restoreOffsets } from './literal-elision.js';
import { normalizedKey } from './normalize.js';
import { buildOffsetMap, type OffsetMap } from './utf8-offsets.js';

/** What a libpg-query package exports that the parser uses. */
interface LibPgQueryModule {
  loadModule(): Promise<void>;
  parseSync(sql: string): unknown;
}

/**
 * One libpg-query package per PostgreSQL major (DESIGN.md "Parsing"). Each major's package is
 * installed side by side under an npm alias and registered here, e.g. for 16:
 * `"libpg-query-16": "npm:libpg-query@16"` in package.json and
 * `16: () => import('libpg-query-16')` below. A major missing here is refused at connect: parsing
 * with another major's grammar is a parser differential (`system_user` is a column in 15, a
 * function from 16).
 */
const PARSER_PACKAGES: Readonly<Record<number, () => Promise<LibPgQueryModule>>> = {
  15: () => import('libpg-query'),
};

/** Raised when no parser is registered (or loaded) for a server major. SQLSTATE 0A000. */
export class ParserUnavailableError extends Error {
  readonly sqlstate = '0A000';
  constructor(readonly major: number) {
    super(
      `PostgreSQL ${major} is not supported: pgwarden has no parser for this server version ` +
        `(supported: ${supportedParserMajors().join(', ')})`,
    );
    this.name = 'ParserUnavailableError';
  }
}

/** One top-level statement of a SQL string, as the grammar split it. */
export interface ParsedStatement {
  /** The top-level node name, e.g. `SelectStmt`. */
  readonly nodeType: string;
  /** The node's own fields (the value under `nodeType`). */
  readonly node: unknown;
  /** Character offset and length in the whole text (stmt_location/stmt_len, converted). */
  readonly location: number;
  readonly length: number;
}

/** A successfully parsed SQL string. */
export interface ParsedSql {
  readonly text: string;
  readonly major: number;
  readonly statements: readonly ParsedStatement[];
  /** Converts node `location` values (UTF-8 bytes) to character offsets. */
  readonly offsets: OffsetMap;
  /** The raw parse result (`{ version, stmts }`), for normalization. */
  readonly tree: { readonly stmts?: readonly unknown[] };
}

/** The outcome of parsing: the statements, or the refusal Postgres would give (42601). */
export type ParseOutcome =
  | { readonly ok: true; readonly parsed: ParsedSql }
  | { readonly ok: false; readonly refusal: AnalysisRefusal };

/** Bounds of one parse. */
export interface ParseLimits {
  /**
   * Largest text (UTF-8 bytes) handed to the grammar, after long literals are set aside
   * (literal-elision.ts); a larger one is refused with 54000. Default: no bound.
   */
  readonly maxParsedBytes?: number;
}

/** A loaded parser for one PostgreSQL major. */
export interface PgParser {
  readonly major: number;
  /**
   * Parses `sql` with this major's grammar. Output: the statements in order with character
   * offsets, or a refusal: 42601 with the character position of a syntax error (as Postgres
   * reports it), 42601 for a NUL character (the wire protocol ends a query string there, so
   * the parser would see a prefix), 22021 for text that is not well-formed Unicode, 54000
   * program_limit_exceeded for a text over `limits.maxParsedBytes`. Never throws.
   * An empty or comment-only string has no statements (Postgres answers EmptyQueryResponse).
   *
   * A long text's long string literals are not handed to the grammar (its JSON tree would cost
   * about ten times the literal's size): the grammar parses the text with each replaced by a short
   * placeholder literal, and the tree is used only when every placeholder came back as its own
   * A_Const in a place whose value no analysis reads (normalize.ts blanks it: not an ordinal, a
   * reg* cast, a function argument, nor any literal of a statement other than the five row
   * statements); its offsets are then moved back onto `sql`, and the A_Const holds the placeholder
   * value, not the literal's. Otherwise `sql` itself is parsed (within the bound).
   */
  parse(sql: string, limits?: ParseLimits): ParseOutcome;
}

/** A UTF-16 surrogate without its pair: text that has no UTF-8 encoding. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const loading = new Map<number, Promise<PgParser>>();
const loaded = new Map<number, PgParser>();

/** The majors a parser is registered for, ascending. */
export function supportedParserMajors(): number[] {
  return Object.keys(PARSER_PACKAGES)
    .map(Number)
    .sort((a, b) => a - b);
}

/**
 * The PostgreSQL major of a `server_version_num` (150018 → 15; 90624 → 9.6 is reported as 9).
 * Source: server_version_num is major*10000 + minor from PostgreSQL 10 on.
 */
export function majorOfServerVersion(serverVersionNum: number): number {
  return Math.floor(serverVersionNum / 10000);
}

/**
 * Loads (once) the parser for `major`. Input: a PostgreSQL major (15). Output: the parser.
 * Errors: rejects with {@link ParserUnavailableError} (0A000) when no package is registered for
 * the major; rejects when the WebAssembly module fails to load.
 */
export function loadParser(major: number): Promise<PgParser> {
  const existing = loading.get(major);
  if (existing) return existing;
  const importer = PARSER_PACKAGES[major];
  if (!importer) return Promise.reject(new ParserUnavailableError(major));
  const p = (async () => {
    const mod = await importer();
    await mod.loadModule();
    const parser = makeParser(major, mod);
    loaded.set(major, parser);
    return parser;
  })();
  p.catch(() => loading.delete(major));
  loading.set(major, p);
  return p;
}

/** The parser for `major` if {@link loadParser} has finished loading it, else undefined. */
export function loadedParser(major: number): PgParser | undefined {
  return loaded.get(major);
}

function syntaxRefusal(message: string, location?: number): AnalysisRefusal {
  return location === undefined ? { sqlstate: '42601', message } : { sqlstate: '42601', message, location };
}

/** 54000 for a text the grammar is not given: over the analysis bound (limits.max_analysis_bytes). */
function tooLong(bytes: number, max: number): AnalysisRefusal {
  return {
    sqlstate: '54000',
    message: `statement too long for pgwarden to analyze: ${bytes} bytes, over the limit of ${max} (limits.max_analysis_bytes)`,
  };
}

/** libpg-query's parse of `text`, or the refusal for its syntax error. */
function tryParse(
  mod: LibPgQueryModule,
  text: string,
): { tree: { stmts?: readonly unknown[] } } | { refusal: AnalysisRefusal } {
  try {
    return { tree: mod.parseSync(text) as { stmts?: readonly unknown[] } };
  } catch (err) {
    const e = err as { message?: unknown; sqlDetails?: { cursorPosition?: unknown } };
    const message = typeof e.message === 'string' ? e.message : 'syntax error';
    // libpg-query reports Postgres's cursorpos (1-based characters) as 0-based characters.
    const pos = e.sqlDetails?.cursorPosition;
    return { refusal: syntaxRefusal(message, typeof pos === 'number' ? pos : undefined) };
  }
}

/**
 * Whether the tree of an elided text stands for the original (PgParser.parse): each placeholder
 * one A_Const at its own offset, every one blanked by the normalized key (no analysis reads its
 * value). On true its offsets have been moved onto the original text.
 */
function elidedTreeUsable(tree: { stmts?: readonly unknown[] }, elision: Elision, major: number): boolean {
  const statements: ParsedStatement[] = (tree.stmts ?? []).map((raw) => {
    const wrapper = (raw as { stmt?: Record<string, unknown> }).stmt ?? {};
    const nodeType = Object.keys(wrapper)[0] ?? 'UnknownStmt';
    return { nodeType, node: wrapper[nodeType], location: 0, length: 0 };
  });
  const key = normalizedKey({
    text: elision.text,
    major,
    statements,
    offsets: buildOffsetMap(elision.text),
    tree,
  });
  if (key === null || key.includes('pgwarden_elided_')) return false;
  return restoreOffsets(tree, elision);
}

function makeParser(major: number, mod: LibPgQueryModule): PgParser {
  return {
    major,
    parse(sql: string, limits?: ParseLimits): ParseOutcome {
      const nul = sql.indexOf('\u0000');
      if (nul >= 0) {
        return {
          ok: false,
          refusal: syntaxRefusal('query text contains a NUL character', [...sql.slice(0, nul)].length),
        };
      }
      if (LONE_SURROGATE.test(sql)) {
        return {
          ok: false,
          refusal: { sqlstate: '22021', message: 'invalid byte sequence for encoding "UTF8"' },
        };
      }
      const offsets = buildOffsetMap(sql);
      // libpg-query refuses a blank string itself; Postgres answers it with EmptyQueryResponse.
      if (sql.trim() === '') {
        return { ok: true, parsed: { text: sql, major, statements: [], offsets, tree: { stmts: [] } } };
      }
      const max = limits?.maxParsedBytes ?? Number.POSITIVE_INFINITY;
      const elision = elideLongLiterals(sql);
      let tree: { stmts?: readonly unknown[] } | undefined;
      if (elision && Buffer.byteLength(elision.text, 'utf8') <= max) {
        const t = tryParse(mod, elision.text);
        if ('tree' in t && elidedTreeUsable(t.tree, elision, major)) tree = t.tree;
      }
      if (!tree) {
        const bytes = Buffer.byteLength(sql, 'utf8');
        if (bytes > max) return { ok: false, refusal: tooLong(bytes, max) };
        const t = tryParse(mod, sql);
        if (!('tree' in t)) return { ok: false, refusal: t.refusal };
        tree = t.tree;
      }
      const statements: ParsedStatement[] = [];
      for (const raw of tree.stmts ?? []) {
        const r = raw as { stmt?: Record<string, unknown>; stmt_location?: number; stmt_len?: number };
        const wrapper = r.stmt ?? {};
        const nodeType = Object.keys(wrapper)[0] ?? 'UnknownStmt';
        // An absent field in libpg-query's JSON means zero; a zero stmt_len means "to the end".
        const byteLoc = r.stmt_location ?? 0;
        const byteLen = r.stmt_len ?? 0;
        const location = offsets.toChar(byteLoc);
        const end = byteLen > 0 ? offsets.toChar(byteLoc + byteLen) : offsets.charLength;
        statements.push({ nodeType, node: wrapper[nodeType], location, length: end - location });
      }
      return { ok: true, parsed: { text: sql, major, statements, offsets, tree } };
    },
  };
}

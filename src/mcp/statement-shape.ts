// The shape of a tool's SQL: exactly one statement, its span and its parse node type.
import { LRUCache } from 'lru-cache';
import { loadParser, majorOfServerVersion } from '../sql/parser.js';
import { ToolFailure } from './tool-errors.js';

/**
 * Shapes already read, by parser major and text (an agent repeats its statements: a parse is 0.1–1
 * ms of CPU, issue 18). At most 512 texts of at most 16 KiB each: 8 MiB at worst; a longer text is
 * parsed every time. A shape is a function of the text and the grammar alone.
 */
const shapes = new LRUCache<string, StatementShape | ToolFailure>({ max: 512 });
const MAX_CACHED_TEXT = 16 * 1024;

/** What a tool may do with the caller's SQL. */
export interface StatementShape {
  /**
   * The one statement's text (its own span: a trailing `;` dropped), or the whole text when the
   * parser refused it — the proxy then answers the syntax error itself, with its own message.
   */
  readonly text: string;
  /** The statement's parse node type (`SelectStmt`, `TransactionStmt`, …); undefined when the parser refused the text. */
  readonly nodeType?: string;
}

/**
 * Reads the shape of `sql` with the parser of the upstream's major (`serverVersionNum`), the same
 * grammar the proxy analyzes with. Output: the statement's text and node type.
 * Throws {@link ToolFailure} 42601 for an empty text or more than one statement (a tool runs one
 * statement; the extended protocol would refuse several with the same SQLSTATE). A text that does
 * not parse is returned whole, for the proxy to refuse. Rejects with
 * ParserUnavailableError (0A000) for a major without a parser.
 */
export async function statementShape(sql: string, serverVersionNum: number): Promise<StatementShape> {
  const major = majorOfServerVersion(serverVersionNum);
  const key = sql.length <= MAX_CACHED_TEXT ? `${major}\0${sql}` : undefined;
  let shape = key === undefined ? undefined : shapes.get(key);
  if (shape === undefined) {
    shape = readShape((await loadParser(major)).parse(sql), sql);
    if (key !== undefined) shapes.set(key, shape);
  }
  if (shape instanceof ToolFailure) throw shape;
  return shape;
}

/** The shape of `sql` from its parse `out`, or the 42601 failure to throw for it. */
function readShape(
  out: ReturnType<Awaited<ReturnType<typeof loadParser>>['parse']>,
  sql: string,
): StatementShape | ToolFailure {
  if (!out.ok) return { text: sql };
  const statements = out.parsed.statements;
  if (statements.length === 0) return new ToolFailure('42601', 'no statement to run: the SQL text is empty');
  if (statements.length > 1)
    return new ToolFailure(
      '42601',
      `cannot run ${statements.length} statements in one call: a tool runs exactly one statement`,
    );
  const s = statements[0]!;
  const text = sql.slice(s.location, s.location + s.length);
  return { text, nodeType: s.nodeType };
}

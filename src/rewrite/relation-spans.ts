// Where a RangeVar's name, and the ONLY / TABLE / `*` around it, sit in the token stream.
import type { Token } from './sql-tokens.js';
import { tokenAt } from './sql-tokens.js';

/** A byte span of the text to replace. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

/** The name of a token as Postgres reads it (folded unquoted identifier, or quoted body). */
function nameOf(t: Token | undefined): string | undefined {
  return t && (t.kind === 'ident' || t.kind === 'qident') ? t.text : undefined;
}

/**
 * The tokens of a dotted name of `parts.length` identifiers starting at byte `location`, checked
 * against the names the parse tree holds. Output: the token index range [first, last], or null
 * when the text there is not that name (a U&"…" identifier with escapes, say): the caller
 * refuses then, never guesses.
 */
export function nameTokens(
  tokens: readonly Token[],
  location: number,
  parts: readonly string[],
): { first: number; last: number } | null {
  const first = tokenAt(tokens, location);
  if (first < 0) return null;
  let i = first;
  for (let p = 0; p < parts.length; p++) {
    if (p > 0) {
      if (tokens[i]?.text !== '.' || tokens[i]?.kind !== 'op') return null;
      i++;
    }
    if (nameOf(tokens[i]) !== parts[p]) return null;
    i++;
  }
  return { first, last: i - 1 };
}

/**
 * The span a masking subquery replaces for the relation named by tokens [first, last] of a FROM
 * item: the name, with `ONLY` (or `ONLY ( name )`) before it and the inheritance `*` after it.
 * `only` tells whether ONLY was written; `tableForm` whether the reference is the `TABLE name`
 * shorthand (its `TABLE` keyword must become `SELECT * FROM`). Null when the tokens around the
 * name are not what the parse tree says (fail closed).
 */
export function fromItemSpan(
  tokens: readonly Token[],
  first: number,
  last: number,
  inh: boolean,
): { span: Span; only: boolean; tableKeyword: Span | null } | null {
  let start = first;
  let end = last;
  let only = false;
  const before = tokens[first - 1];
  const isWord = (t: Token | undefined, w: string) => t?.kind === 'ident' && t.text === w;
  if (!inh) {
    if (isWord(before, 'only')) {
      start = first - 1;
      only = true;
    } else if (before?.text === '(' && before.kind === 'op' && isWord(tokens[first - 2], 'only')) {
      if (tokens[last + 1]?.text !== ')') return null;
      start = first - 2;
      end = last + 1;
      only = true;
    } else return null;
  } else if (tokens[last + 1]?.kind === 'op' && tokens[last + 1]?.text === '*') {
    end = last + 1;
  }
  const kw = tokens[start - 1];
  const tableKeyword = isWord(kw, 'table') && kw ? { start: kw.start, end: kw.end } : null;
  const s = tokens[start];
  const e = tokens[end];
  if (!s || !e) return null;
  return { span: { start: s.start, end: e.end }, only, tableKeyword };
}

/** The end byte of the ColumnRef whose first token starts at byte `location`, with `n` fields; null when the tokens do not match. */
export function columnRefEnd(tokens: readonly Token[], location: number, n: number): number | null {
  let i = tokenAt(tokens, location);
  if (i < 0) return null;
  for (let f = 1; f < n; f++) {
    if (tokens[i + 1]?.text !== '.') return null;
    i += 2;
  }
  return tokens[i]?.end ?? null;
}

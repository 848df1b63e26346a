// A lexer for the text the rewrite splices: token boundaries in UTF-8 bytes, as libpg-query's locations count.

/**
 * Token kinds the rewrite tells apart. `ident` is an unquoted identifier or keyword (its `text`
 * folded to lower case, as Postgres folds it); `qident` a quoted identifier ("…" or U&"…", `text`
 * is its body, undoubled, escapes left as written); `string` any string constant ('…', E'…',
 * B'…', X'…', N'…', U&'…', $tag$…$tag$; its `text` is '': no rewrite reads a literal's value, and
 * a copy of a 60 MB literal was held outside the memory budget, issue 16 item 2); `number`;
 * `param` ($1); `op` an operator or punctuation character sequence (`(`, `)`, `,`, `.`, `;`, `[`, `]`, `*` are always one character each).
 */
export type TokenKind = 'ident' | 'qident' | 'string' | 'number' | 'param' | 'op';

/** One token: `start` and `end` are UTF-8 byte offsets into the text (end exclusive). */
export interface Token {
  readonly kind: TokenKind;
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** Raised when the text cannot be lexed (an unterminated quote or comment). */
export class LexError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'LexError';
  }
}

const SELF = new Set(['(', ')', ',', '.', ';', '[', ']', '*', ':']);
const OP_CHARS = new Set([...'+-*/<>=~!@#%^&|`?']);

function isIdentStart(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c >= 0x80;
}

function isIdentChar(c: number): boolean {
  return isIdentStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x24;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/**
 * Splits the UTF-8 bytes of a SQL text into tokens, skipping whitespace and comments (`--` to end
 * of line, nested `/* … *\/`), with `standard_conforming_strings = on` (a backslash escapes only in
 * E'…'), which pgwarden keeps on for every session. Input: the bytes. Output: the tokens in order.
 * Throws {@link LexError} for an unterminated quoted identifier, string or comment. Source:
 * PostgreSQL's scan.l (identifiers, quoted identifiers, string constants, dollar quoting,
 * comments, parameters, operators).
 */
export function tokenize(bytes: Uint8Array): Token[] {
  const out: Token[] = [];
  const n = bytes.length;
  const text = (a: number, b: number) =>
    Buffer.from(bytes.buffer, bytes.byteOffset + a, b - a).toString('utf8');
  let i = 0;
  while (i < n) {
    const c = bytes[i] as number;
    // Whitespace.
    if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c) {
      i++;
      continue;
    }
    // -- comment.
    if (c === 0x2d && bytes[i + 1] === 0x2d) {
      while (i < n && bytes[i] !== 0x0a && bytes[i] !== 0x0d) i++;
      continue;
    }
    // /* nested comment */.
    if (c === 0x2f && bytes[i + 1] === 0x2a) {
      const start = i;
      let depth = 0;
      do {
        if (bytes[i] === 0x2f && bytes[i + 1] === 0x2a) {
          depth++;
          i += 2;
        } else if (bytes[i] === 0x2a && bytes[i + 1] === 0x2f) {
          depth--;
          i += 2;
        } else i++;
      } while (depth > 0 && i < n);
      if (depth > 0) throw new LexError('unterminated /* comment', start);
      continue;
    }
    const start = i;
    // Prefixed strings and identifiers: E'…', B'…', X'…', N'…', U&'…', U&"…".
    const lower = c | 0x20;
    if ((lower === 0x65 || lower === 0x62 || lower === 0x78 || lower === 0x6e) && bytes[i + 1] === 0x27) {
      i = endOfString(bytes, i + 1, lower === 0x65);
      out.push({ kind: 'string', start, end: i, text: '' });
      continue;
    }
    if (lower === 0x75 && bytes[i + 1] === 0x26 && (bytes[i + 2] === 0x27 || bytes[i + 2] === 0x22)) {
      if (bytes[i + 2] === 0x27) {
        i = endOfString(bytes, i + 2, false);
        out.push({ kind: 'string', start, end: i, text: '' });
      } else {
        i = endOfQuoted(bytes, i + 2);
        out.push({ kind: 'qident', start, end: i, text: text(start + 3, i - 1).replaceAll('""', '"') });
      }
      continue;
    }
    if (c === 0x27) {
      i = endOfString(bytes, i, false);
      out.push({ kind: 'string', start, end: i, text: '' });
      continue;
    }
    if (c === 0x22) {
      i = endOfQuoted(bytes, i);
      out.push({ kind: 'qident', start, end: i, text: text(start + 1, i - 1).replaceAll('""', '"') });
      continue;
    }
    if (c === 0x24) {
      // $1 parameter, or $tag$ … $tag$ dollar quoting.
      if (isDigit(bytes[i + 1] ?? 0)) {
        i++;
        while (i < n && isDigit(bytes[i] as number)) i++;
        out.push({ kind: 'param', start, end: i, text: text(start, i) });
        continue;
      }
      let j = i + 1;
      while (j < n && isIdentChar(bytes[j] as number) && bytes[j] !== 0x24) j++;
      if (bytes[j] === 0x24) {
        const tag = Buffer.from(bytes.subarray(i, j + 1));
        const close = Buffer.from(bytes.buffer, bytes.byteOffset, n).indexOf(tag, j + 1);
        if (close < 0) throw new LexError('unterminated dollar-quoted string', start);
        i = close + tag.length;
        out.push({ kind: 'string', start, end: i, text: '' });
        continue;
      }
      i++;
      out.push({ kind: 'op', start, end: i, text: '$' });
      continue;
    }
    if (isIdentStart(c)) {
      i++;
      while (i < n && isIdentChar(bytes[i] as number)) i++;
      out.push({ kind: 'ident', start, end: i, text: text(start, i).toLowerCase() });
      continue;
    }
    if (isDigit(c) || (c === 0x2e && isDigit(bytes[i + 1] ?? 0))) {
      i++;
      while (i < n && (isIdentChar(bytes[i] as number) || bytes[i] === 0x2e)) {
        // 1..2 is a number and a `..`-less range: stop before a second dot pair.
        if (bytes[i] === 0x2e && bytes[i + 1] === 0x2e) break;
        if ((bytes[i] === 0x2b || bytes[i] === 0x2d) && ((bytes[i - 1] ?? 0) | 0x20) !== 0x65) break;
        i++;
        if (((bytes[i - 1] ?? 0) | 0x20) === 0x65 && (bytes[i] === 0x2b || bytes[i] === 0x2d)) i++;
      }
      out.push({ kind: 'number', start, end: i, text: text(start, i) });
      continue;
    }
    const ch = String.fromCharCode(c);
    if (
      SELF.has(ch) &&
      !(ch === ':' && bytes[i + 1] === 0x3a) &&
      !(ch === '*' && OP_CHARS.has(String.fromCharCode(bytes[i + 1] ?? 0)))
    ) {
      i++;
      out.push({ kind: 'op', start, end: i, text: ch });
      continue;
    }
    if (ch === ':' && bytes[i + 1] === 0x3a) {
      i += 2;
      out.push({ kind: 'op', start, end: i, text: '::' });
      continue;
    }
    if (OP_CHARS.has(ch)) {
      i++;
      while (i < n && OP_CHARS.has(String.fromCharCode(bytes[i] as number))) {
        // A comment start ends an operator (scan.l).
        if ((bytes[i] === 0x2d && bytes[i + 1] === 0x2d) || (bytes[i] === 0x2f && bytes[i + 1] === 0x2a))
          break;
        i++;
      }
      out.push({ kind: 'op', start, end: i, text: text(start, i) });
      continue;
    }
    i++;
    out.push({ kind: 'op', start, end: i, text: ch });
  }
  return out;
}

/** The end of a '…' string starting at `i` (its opening quote); `backslash`: E'…' escapes. */
function endOfString(bytes: Uint8Array, i: number, backslash: boolean): number {
  const start = i;
  i++;
  for (;;) {
    if (i >= bytes.length) throw new LexError('unterminated quoted string', start);
    if (!backslash) {
      // No escapes: the next quote is the end or the first of a doubled pair (one native search).
      const q = bytes.indexOf(0x27, i);
      i = q < 0 ? bytes.length : q;
      if (q < 0) continue;
    }
    const c = bytes[i];
    if (backslash && c === 0x5c) {
      i += 2;
      continue;
    }
    if (c === 0x27) {
      if (bytes[i + 1] === 0x27) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
}

/** The end of a "…" identifier starting at `i` (its opening quote). */
function endOfQuoted(bytes: Uint8Array, i: number): number {
  const start = i;
  i++;
  for (;;) {
    if (i >= bytes.length) throw new LexError('unterminated quoted identifier', start);
    if (bytes[i] === 0x22) {
      if (bytes[i + 1] === 0x22) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
}

/** Index of the token starting exactly at byte `offset`, or -1 (binary search over `tokens`). */
export function tokenAt(tokens: readonly Token[], offset: number): number {
  let lo = 0;
  let hi = tokens.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t = tokens[mid] as Token;
    if (t.start === offset) return mid;
    if (t.start < offset) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** `name` as a quoted identifier (always quoted: the rewrite never relies on case folding). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

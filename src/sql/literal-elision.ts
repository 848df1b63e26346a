// Long string literals set aside before parsing: the parser sees a short placeholder, the tree gets the original offsets back.

import crypto from 'node:crypto';

/** Only texts at least this long (UTF-16 code units) are scanned for literals to set aside. */
export const ELIDE_TEXT_MIN = 64 * 1024;
/** A literal at least this long (code units, quotes included) is set aside. */
export const ELIDE_LITERAL_MIN = 1024;

/** One literal set aside: where it is in the original (UTF-8 bytes) and in the parsed text. */
export interface ElidedSpan {
  /** Byte offsets of the whole literal (prefix and quotes included) in the original text. */
  readonly start: number;
  readonly end: number;
  /** Byte offset of the placeholder in the text handed to the parser. */
  readonly at: number;
  /** The placeholder's value (its A_Const's sval): unique to this parse. */
  readonly value: string;
}

/** The text handed to the parser in place of the original, and the literals set aside. */
export interface Elision {
  readonly text: string;
  /** In text order; never empty. */
  readonly spans: readonly ElidedSpan[];
}

const isIdentStart = (c: number) =>
  (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c >= 0x80;
const isIdentCont = (c: number) => isIdentStart(c) || (c >= 0x30 && c <= 0x39) || c === 0x24;
const isSpace = (c: number) =>
  c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d || c === 0x0c || c === 0x0b;

/**
 * Finds the standard ('…'), extended (E'…') and dollar-quoted ($tag$…$tag$) string literals of at
 * least {@link ELIDE_LITERAL_MIN} characters in `sql` and returns the text with each replaced by a
 * short standard literal holding a fresh placeholder value; null when there is nothing to set
 * aside or when the scan cannot be sure it reads the text as PostgreSQL's lexer does (then the
 * caller parses the original). The scan follows PostgreSQL 15's scan.l with
 * standard_conforming_strings on: `--` and nested `/* *\/` comments, "…" and U&"…" identifiers,
 * identifiers absorbing `$`, parameters, B'…', X'…', N'…' and U&'…' strings (skipped, never set
 * aside), E'…' backslash escapes, and dollar quotes ending at the first copy of their delimiter.
 * It gives up on a string continued across a newline ('a'⏎'b', one literal to PostgreSQL), on
 * any unterminated quote or comment, and sets aside only literals whose opening is preceded by a
 * character that cannot join a token with it (not a letter, digit, `_`, `$`, `&` or non-ASCII).
 * The parse of the returned text must then be checked with {@link restoreOffsets}.
 */
export function elideLongLiterals(sql: string): Elision | null {
  if (sql.length < ELIDE_TEXT_MIN) return null;
  const tag = crypto.randomBytes(6).toString('hex');
  const spans: ElidedSpan[] = [];
  const parts: string[] = [];
  let copied = 0; // code units of sql already in parts
  let bytesBefore = 0; // UTF-8 bytes of sql[0, copied)
  let outBytes = 0; // UTF-8 bytes of parts so far
  const n = sql.length;
  let i = 0;
  /** Sets aside sql[a, b) (a literal) if long enough and cleanly delimited. */
  const consider = (a: number, b: number) => {
    if (b - a < ELIDE_LITERAL_MIN) return;
    const before = a > 0 ? sql.charCodeAt(a - 1) : 0x20;
    if (isIdentCont(before) || before === 0x26 /* & */) return;
    const head = sql.slice(copied, a);
    const headBytes = Buffer.byteLength(head, 'utf8');
    const value = `pgwarden_elided_${tag}_${spans.length}`;
    const start = bytesBefore + headBytes;
    const end = start + Buffer.byteLength(sql.slice(a, b), 'utf8');
    parts.push(head, `'${value}'`);
    spans.push({ start, end, at: outBytes + headBytes, value });
    outBytes += headBytes + value.length + 2;
    bytesBefore = end;
    copied = b;
  };
  /** After a quoted string's closing quote at `j`: true when PostgreSQL would continue it (whitespace with a newline, then a quote). */
  const continues = (j: number): boolean => {
    let newline = false;
    let k = j;
    while (k < n) {
      const c = sql.charCodeAt(k);
      if (isSpace(c)) {
        if (c === 0x0a || c === 0x0d) newline = true;
        k++;
      } else if (c === 0x2d && sql.charCodeAt(k + 1) === 0x2d) {
        while (k < n && sql.charCodeAt(k) !== 0x0a && sql.charCodeAt(k) !== 0x0d) k++;
      } else return newline && c === 0x27;
    }
    return false;
  };
  /** End (exclusive) of a quoted body starting after the opening quote at `j`, or -1. */
  const quoted = (j: number, quote: number, backslash: boolean): number => {
    const q = String.fromCharCode(quote);
    let k = j;
    let slash = -1; // the next backslash at or after k (E'…' only), -1 for none
    if (backslash) slash = sql.indexOf('\\', k);
    for (;;) {
      const at = sql.indexOf(q, k);
      if (at < 0) return -1;
      if (slash >= 0 && slash < at) {
        // A backslash escapes the next character, a quote included.
        k = slash + 2;
        slash = sql.indexOf('\\', k);
        continue;
      }
      if (sql.charCodeAt(at + 1) === quote) {
        k = at + 2;
        if (slash >= 0 && slash < k) slash = sql.indexOf('\\', k);
        continue;
      }
      return at + 1;
    }
  };
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === 0x2d && sql.charCodeAt(i + 1) === 0x2d) {
      while (i < n && sql.charCodeAt(i) !== 0x0a && sql.charCodeAt(i) !== 0x0d) i++;
      continue;
    }
    if (c === 0x2f && sql.charCodeAt(i + 1) === 0x2a) {
      let depth = 0;
      i += 2;
      for (;;) {
        if (i >= n) return null;
        const d = sql.charCodeAt(i);
        if (d === 0x2f && sql.charCodeAt(i + 1) === 0x2a) {
          depth++;
          i += 2;
        } else if (d === 0x2a && sql.charCodeAt(i + 1) === 0x2f) {
          i += 2;
          if (depth-- === 0) break;
        } else i++;
      }
      continue;
    }
    if (c === 0x22 /* " */) {
      const end = quoted(i + 1, 0x22, false);
      if (end < 0) return null;
      i = end;
      continue;
    }
    if (c === 0x27 /* ' */) {
      const end = quoted(i + 1, 0x27, false);
      if (end < 0 || continues(end)) return null;
      consider(i, end);
      i = end;
      continue;
    }
    if (c === 0x24 /* $ */) {
      const next = sql.charCodeAt(i + 1);
      if (next >= 0x30 && next <= 0x39) {
        // A parameter ($1), with any junk the lexer glues to it.
        i++;
        while (i < n && isIdentCont(sql.charCodeAt(i))) i++;
        continue;
      }
      let k = i + 1;
      if (k < n && isIdentStart(sql.charCodeAt(k))) {
        k++;
        while (k < n && isIdentCont(sql.charCodeAt(k)) && sql.charCodeAt(k) !== 0x24) k++;
      }
      if (sql.charCodeAt(k) !== 0x24) {
        i++; // a lone `$`: not a delimiter
        continue;
      }
      const delim = sql.slice(i, k + 1);
      const close = sql.indexOf(delim, k + 1);
      if (close < 0) return null;
      const end = close + delim.length;
      consider(i, end);
      i = end;
      continue;
    }
    if (isIdentStart(c)) {
      let k = i + 1;
      while (k < n && isIdentCont(sql.charCodeAt(k))) k++;
      const next = sql.charCodeAt(k);
      if (k === i + 1 && next === 0x27) {
        // One letter glued to a quote: E'…' (backslash escapes), B'…', X'…', N'…' (standard bodies).
        const e = c === 0x45 || c === 0x65;
        if (e || c === 0x42 || c === 0x62 || c === 0x58 || c === 0x78 || c === 0x4e || c === 0x6e) {
          const end = quoted(k + 1, 0x27, e);
          if (end < 0 || continues(end)) return null;
          if (e) consider(i, end);
          i = end;
          continue;
        }
      }
      if (k === i + 1 && (c === 0x55 || c === 0x75) && next === 0x26) {
        const q = sql.charCodeAt(k + 1);
        if (q === 0x27 || q === 0x22) {
          // U&'…' and U&"…": bodies like the standard ones; never set aside (a UESCAPE may follow).
          const end = quoted(k + 2, q, false);
          if (end < 0 || (q === 0x27 && continues(end))) return null;
          i = end;
          continue;
        }
      }
      i = k;
      continue;
    }
    if (c >= 0x30 && c <= 0x39) {
      i++;
      while (i < n && sql.charCodeAt(i) >= 0x30 && sql.charCodeAt(i) <= 0x39) i++;
      continue;
    }
    i++;
  }
  if (spans.length === 0) return null;
  parts.push(sql.slice(copied));
  return { text: parts.join(''), spans };
}

/**
 * Checks the parse tree of an elided text and moves its byte offsets onto the original text, in
 * place. Every placeholder must be exactly one A_Const, at the placeholder's own offset, whose
 * sval is the placeholder value (so PostgreSQL's lexer read each replaced span as one string
 * literal starting where the scan found it, in the same state); anything else — a placeholder
 * value inside a longer literal, a literal glued to its neighbour, a value read as a function
 * body or a file name — returns false and the caller must not use the tree. On true, every
 * `location` (and `stmt_location`/`stmt_len`) is an offset into the original text.
 * Input: the raw parse result of `elision.text`. Errors: none.
 */
export function restoreOffsets(tree: unknown, elision: Elision): boolean {
  const spans = elision.spans;
  const byValue = new Map<string, ElidedSpan>(spans.map((s) => [s.value, s]));
  /** Placeholder values seen anywhere in the tree, and those seen as their own A_Const. */
  const seen = new Map<string, number>();
  const found = new Set<string>();
  /** Offset in the original of offset `b` of the parsed text. */
  const map = (b: number): number => {
    let shift = 0;
    for (const s of spans) {
      if (b < s.at) break;
      const placeholderEnd = s.at + s.value.length + 2;
      if (b < placeholderEnd) return s.start;
      shift = s.end - placeholderEnd;
    }
    return b + shift;
  };
  let ok = true;
  const stack: unknown[] = [tree];
  const objects: Record<string, unknown>[] = [];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (const x of v) stack.push(x);
      continue;
    }
    const o = v as Record<string, unknown>;
    objects.push(o);
    for (const k in o) {
      const child = o[k];
      if (typeof child === 'string') {
        if (!child.includes('pgwarden_elided_')) continue;
        if (byValue.has(child)) seen.set(child, (seen.get(child) ?? 0) + 1);
        else ok = false;
      } else if (child !== null && typeof child === 'object') stack.push(child);
    }
    const c = o.A_Const as { sval?: { sval?: unknown }; location?: unknown } | undefined;
    const sval = c?.sval?.sval;
    if (typeof sval === 'string' && byValue.has(sval)) {
      // An absent location is zero (libpg-query's JSON omits zero fields).
      if (((c?.location as number | undefined) ?? 0) !== byValue.get(sval)?.at) ok = false;
      found.add(sval);
    }
  }
  for (const count of seen.values()) if (count !== 1) ok = false;
  if (!ok || found.size !== spans.length) return false;
  for (const o of objects) {
    if (typeof o.location === 'number' && o.location >= 0) o.location = map(o.location);
    if (typeof o.stmt_location === 'number' || typeof o.stmt_len === 'number') {
      const loc = (o.stmt_location as number | undefined) ?? 0;
      const len = (o.stmt_len as number | undefined) ?? 0;
      const start = map(loc);
      o.stmt_location = start;
      // A zero stmt_len means "to the end of the text" and stays so.
      if (len > 0) o.stmt_len = map(loc + len) - start;
    }
  }
  return true;
}

// A key for "the same text with other literals of the same length", found without parsing.

/** Characters a plain SQL text may hold for the lexical key (printable ASCII, no quoting tricks). */
const PLAIN = /^[A-Za-z0-9_\s(),.;=<>+\-*/%:[\]|!'@&^~?]*$/;

/** Marker characters; control characters cannot occur in a text PLAIN accepts, so they cannot collide. */
const INT_MARK = '\u0001';
const STRING_MARK = '\u0002';

/**
 * The lexical key of `sql`: the text with the characters of each integer literal (1–9 digits, so
 * always an int4 constant) and of each standard string literal's body replaced by marker
 * characters, everything else kept byte for byte. Two texts with the same key differ only in the
 * values of literals of the same kind and length, so their parse trees are the same node for node
 * with literals at the same offsets — what the parse-based normalized key (normalize.ts) checks by
 * parsing. Returns null, so that the caller parses, for any text outside the plain subset where
 * the scan could disagree with PostgreSQL's lexer: non-ASCII, double quotes, dollar signs,
 * backslashes, comments, prefixed strings (E'', U&'', B'', X'', N''), numbers with a point or an
 * exponent, or numbers of 10 digits or more.
 * Source: PostgreSQL 15 src/backend/parser/scan.l (standard_conforming_strings on).
 */
export function lexicalKey(sql: string): string | null {
  // The caches of one statement ask for the same text in turn: the last answer is kept.
  if (sql === lastText) return lastKey;
  const key = scan(sql);
  lastText = sql;
  lastKey = key;
  return key;
}

let lastText: string | undefined;
let lastKey: string | null = null;

function scan(sql: string): string | null {
  if (!PLAIN.test(sql) || sql.includes('--') || sql.includes('/*')) return null;
  let out = '';
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql.charCodeAt(i);
    if (c === 39 /* ' */) {
      const prev = i > 0 ? sql[i - 1] : ' ';
      if (prev !== undefined && /[A-Za-z0-9_]/.test(prev)) return null; // E'…', x'…', typed literal without space
      let j = i + 1;
      for (;;) {
        if (j >= n) return null;
        if (sql.charCodeAt(j) === 39) {
          if (sql.charCodeAt(j + 1) === 39) {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      out += `'${STRING_MARK.repeat(j - i - 1)}'`;
      i = j + 1;
      continue;
    }
    if (c >= 48 && c <= 57) {
      const prev = i > 0 ? sql[i - 1] : ' ';
      if (prev !== undefined && /[A-Za-z0-9_]/.test(prev)) {
        out += sql[i];
        i++;
        continue;
      }
      let j = i;
      while (j < n && sql.charCodeAt(j) >= 48 && sql.charCodeAt(j) <= 57) j++;
      const next = sql[j];
      if (next === '.' || next === 'e' || next === 'E' || j - i > 9) return null;
      if (next !== undefined && /[A-Za-z_]/.test(next)) return null; // 1x5: PG15 reads an alias
      out += INT_MARK.repeat(j - i);
      i = j;
      continue;
    }
    if (c === 46 /* . */ && /[0-9]/.test(sql[i + 1] ?? '')) return null; // .5
    out += sql[i];
    i++;
  }
  return out;
}

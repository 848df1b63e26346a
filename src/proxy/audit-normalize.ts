// Audit text: a statement with every literal replaced by a numbered placeholder, ordinals kept, huge texts cut (never a raw value).

/** A literal's place in the scanner's output, numbered once the highest parameter of the text is known. */
const LITERAL = '\u0000';

/**
 * Words after which a string constant is an operand, not a typed literal (`type 'text'`): SQL
 * keywords that precede an expression or a string argument (`trim(trailing ';' from …)`, psql's
 * `\d+` of a view; `at time zone 'UTC'`, `between symmetric`, `default 'x'`, COPY's `delimiter
 * ','`, `set names 'UTF8'`, `password 'x'`, `language 'sql'`).
 */
const EXPRESSION_KEYWORDS = new Set(
  `and or not like ilike similar is in then else when select where on by values returning set as escape distinct
   from between all any some case limit offset having using to with into array row return
   elsif if do raise perform leading trailing both placing for symmetric asymmetric default null
   zone delimiter encoding quote format names role authorization schema password language until
   location`.split(/\s+/),
);

/**
 * Type names of several words that may precede a string constant (`timestamp with time zone '…'`,
 * `double precision '1'`), at the end of the scan's output: the whole name becomes the cast.
 */
const MULTI_WORD_TYPE =
  /(?:^|[^A-Za-z0-9_$."])((?:timestamp|time)\s+with(?:out)?\s+time\s+zone|double\s+precision|(?:national\s+)?(?:character|char|bit)\s+varying)$/i;

/**
 * Replaces every literal of a SQL text by a numbered placeholder (`$1`, `$2`, … after the highest
 * parameter the text already has, as pg_stat_statements numbers them), so that the text parses again
 * for `pgwarden replay` and never holds a value (issue 19): string constants ('…', E'…', U&'…',
 * B'…', X'…'), dollar-quoted strings and numbers. A typed literal (`interval '1 day'`) becomes a
 * cast of its placeholder (`$1::interval`). Comments are dropped; identifiers and keywords stay.
 * A text this scanner cannot end cleanly (an unterminated quote) is logged as `[unterminated]`
 * rather than risk printing a value. Output: the normalized text, whitespace collapsed.
 */
export function normalizeForAudit(sql: string): string {
  let maxParam = 0;
  let cut = false;
  const marked = markLiterals(
    sql,
    (n) => {
      if (n > maxParam) maxParam = n;
    },
    () => {
      cut = true;
    },
  );
  if (marked === undefined) return '[unterminated]';
  let k = maxParam;
  const normalized = marked
    .replace(
      /\u0000(?:::([A-Za-z_][A-Za-z0-9_]*))?/g,
      (_m, type: string | undefined) => `$${++k}${type ? `::${type}` : ''}`,
    )
    .replace(/\s+/g, ' ')
    .trim();
  return cut ? `${normalized} [truncated: ${sql.length} characters in all]` : normalized;
}

/** Words that end an ORDER BY / GROUP BY item (what may follow an ordinal such as `ORDER BY 2`). */
const AFTER_ORDINAL =
  /^\s*(?:$|[,);]|(?:asc|desc|nulls|limit|offset|fetch|for|union|intersect|except|window|having|returning)\b)/i;
/** Words that end a sort or grouping list at its own depth (a comma after them starts no item of it). */
const ENDS_SORT_LIST =
  /\b(?:limit|offset|fetch|for|union|intersect|except|window|having|returning|select|from|where)\b/i;

/**
 * Whether the integer at `sql[i, end)` is an ordinal, a position in the select list (`ORDER BY 2`,
 * `GROUP BY 1, 2`): PostgreSQL resolves it to a column (parse_clause.c findTargetlistEntrySQL92),
 * so it is structure, not a value, and pg_stat_statements leaves it in the text too. `out` is the
 * scan's output so far (literals already marked). An item after a comma counts only when the list's
 * ORDER BY / GROUP BY is at the same parenthesis depth with no clause word since; anything less
 * clear is marked as a literal (the safe side: a value never printed).
 */
function isOrdinal(sql: string, end: number, out: string): boolean {
  if (!AFTER_ORDINAL.test(sql.slice(end, end + 16))) return false;
  if (/\b(?:order|group)\s+by\s*$/i.test(out)) return true;
  if (!/,\s*$/.test(out)) return false;
  let by = -1;
  for (const m of out.matchAll(/\b(?:order|group)\s+by\b/gi)) by = m.index + m[0].length;
  if (by < 0) return false;
  const list = out.slice(by);
  if (ENDS_SORT_LIST.test(list) || list.includes(';')) return false;
  let depth = 0;
  for (const c of list) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

/**
 * Where the audit's scan of a statement stops (UTF-16 code units of its output, each literal one
 * mark before its placeholder is numbered); the line then says it was cut. A 60 MB statement of
 * names was scanned whole into a 2 GB string chain outside the memory budget, for 30 s (issue 16
 * item 2). Placeholders of literals after the cut
 * are not numbered, so a cut text's parameters may differ from the whole's.
 */
export const AUDIT_TEXT_MAX = 16 * 1024;

/**
 * The scan of {@link normalizeForAudit}: literals as LITERAL marks; undefined when unterminated.
 * Stops between tokens once the output is longer than {@link AUDIT_TEXT_MAX} (`cut` is called).
 */
function markLiterals(sql: string, param: (n: number) => void, cut: () => void): string | undefined {
  let out = '';
  let i = 0;
  const n = sql.length;
  while (i < n) {
    if (out.length > AUDIT_TEXT_MAX) {
      cut();
      break;
    }
    const ch = sql[i] as string;
    const next = sql[i + 1];
    if (ch === '-' && next === '-') {
      while (i < n && sql[i] !== '\n') i++;
      out += ' ';
      continue;
    }
    if (ch === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
        } else i++;
      }
      if (depth > 0) return undefined;
      out += ' ';
      continue;
    }
    if (ch === '"') {
      let j = i + 1;
      for (;;) {
        const k = sql.indexOf('"', j);
        if (k < 0) return undefined;
        if (sql[k + 1] === '"') j = k + 2;
        else {
          j = k + 1;
          break;
        }
      }
      out += sql.slice(i, j);
      i = j;
      continue;
    }
    // A string constant: every quote starts one, whatever precedes it (E'…', U&'…', B'…', X'…',
    // N'…', and typed literals such as text'…' or interval'…'). Only an E prefix — a lone e
    // before the quote, not the end of a longer name — makes backslashes escapes.
    if (ch === "'") {
      const prev = sql[i - 1] ?? '';
      const beforePrev = sql[i - 2] ?? '';
      const backslashes = (prev === 'e' || prev === 'E') && !/[A-Za-z0-9_$]/.test(beforePrev);
      let j = i + 1;
      for (;;) {
        if (j >= n) return undefined;
        const c = sql[j];
        if (!backslashes && c !== "'") {
          // No escapes: jump to the next quote (one native search, not a loop per character).
          const q = sql.indexOf("'", j);
          j = q < 0 ? n : q;
        } else if (backslashes && c === '\\') j += 2;
        else if (c === "'" && sql[j + 1] === "'") j += 2;
        else if (c === "'") {
          j++;
          break;
        } else j++;
      }
      out = typedLiteral(out);
      i = j;
      continue;
    }
    if (ch === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag && (i === 0 || !/[A-Za-z0-9_]/.test(sql[i - 1] as string))) {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        if (end < 0) return undefined;
        out += LITERAL;
        i = end + tag[0].length;
        continue;
      }
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(next ?? ''))) {
      if (i > 0 && /[A-Za-z_$]/.test(sql[i - 1] as string)) {
        if (sql[i - 1] === '$' && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? ''))
          param(Number(/^\d+/.exec(sql.slice(i))?.[0]));
        out += ch;
        i++;
        continue;
      }
      const num =
        /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][+-]?[0-9]+)?)/.exec(
          sql.slice(i),
        );
      const len = num?.[0].length || 1;
      const text = sql.slice(i, i + len);
      out += /^[0-9]+$/.test(text) && isOrdinal(sql, i + len, out) ? text : LITERAL;
      i += len;
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}

/**
 * Appends a string literal's mark to `out`: as `LITERAL::type` in place of a type name right before
 * it (`date '2024-01-01'`, `interval '1 day'`, `timestamp with time zone '…'`), else plainly.
 */
function typedLiteral(out: string): string {
  // Only the end of `out` is read (a regex over all of it per literal was quadratic in the text).
  // The prefix of E'…', B'…', X'…', N'…' and U&'…' is part of the constant.
  const prefix = /(?:^|[^A-Za-z0-9_$])([EeBbXxNn]|[Uu]&)$/.exec(out.slice(-3));
  if (prefix?.[1] !== undefined) return out.slice(0, out.length - prefix[1].length) + LITERAL;
  // The last word before trailing whitespace: a run of [A-Za-z0-9_] without its leading digits.
  let end = out.length;
  while (end > 0 && /\s/.test(out[end - 1] as string)) end--;
  let start = end;
  while (start > 0 && /[A-Za-z0-9_]/.test(out[start - 1] as string)) start--;
  while (start < end && /[0-9]/.test(out[start] as string)) start++;
  const word = start < end ? out.slice(start, end) : undefined;
  const multi = MULTI_WORD_TYPE.exec(out.slice(Math.max(0, end - 48), end));
  if (multi?.[1] !== undefined)
    return `${out.slice(0, end - multi[1].length)}${LITERAL}::${multi[1].replace(/\s+/g, ' ')}`;
  if (word === undefined || EXPRESSION_KEYWORDS.has(word.toLowerCase()) || /[."]/.test(out[start - 1] ?? ''))
    return out + LITERAL;
  return `${out.slice(0, start)}${LITERAL}::${word}`;
}

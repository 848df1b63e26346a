// Reads search_path values the way PostgreSQL does: SET arguments and set_config's list text.

/** NAMEDATALEN - 1: Postgres truncates identifiers to 63 bytes (truncate_identifier). */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * Truncates an identifier to 63 UTF-8 bytes without splitting a character, as Postgres's
 * truncate_identifier (pg_mbcliplen) does. Input: any name. Output: the name Postgres stores.
 */
export function truncateIdentifier(name: string): string {
  if (Buffer.byteLength(name, 'utf8') <= MAX_IDENTIFIER_BYTES) return name;
  let out = '';
  let bytes = 0;
  for (const ch of name) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > MAX_IDENTIFIER_BYTES) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/** Folds an unquoted identifier as Postgres does in UTF-8 databases: ASCII A–Z only (downcase_identifier). */
export function foldIdentifier(name: string): string {
  return name.replace(/[A-Z]+/g, (m) => m.toLowerCase());
}

/**
 * The schemas of `SET search_path TO a, "B", 'c, d'`. Input: the SET arguments as strings (the
 * parser already folded unquoted names and unquoted quoted ones). Output: one exact schema name per
 * argument: search_path is GUC_LIST_QUOTE, so each argument is quoted whole before the list is
 * split (guc.c flatten_set_variable_args) — `'c, d'` is one schema named `c, d`.
 */
export function searchPathFromSetArgs(args: readonly string[]): string[] {
  return args.map(truncateIdentifier);
}

/**
 * Splits the text of a search_path value (`set_config('search_path', ' x , "Y"', false)`) the way
 * Postgres's SplitIdentifierString does: elements separated by commas, surrounding whitespace
 * dropped, `"…"` quoted names exact with `""` for a quote, unquoted names folded to lower case,
 * every name truncated to 63 bytes. An empty or all-blank text is the empty path.
 * Output: the names, or null when Postgres would reject the value (22023 invalid_parameter_value):
 * an empty element, a zero-length quoted name, an unterminated quote, junk after a quoted name.
 */
export function parseSearchPathText(text: string): string[] | null {
  const out: string[] = [];
  let i = 0;
  const isSpace = (c: string | undefined) =>
    c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
  while (i < text.length && isSpace(text[i])) i++;
  if (i >= text.length) return out;
  for (;;) {
    let name: string;
    if (text[i] === '"') {
      let j = i + 1;
      name = '';
      for (;;) {
        const k = text.indexOf('"', j);
        if (k < 0) return null;
        name += text.slice(j, k);
        if (text[k + 1] === '"') {
          name += '"';
          j = k + 2;
          continue;
        }
        i = k + 1;
        break;
      }
      if (name === '') return null;
    } else {
      let j = i;
      while (j < text.length && text[j] !== ',' && !isSpace(text[j])) j++;
      if (j === i) return null;
      name = foldIdentifier(text.slice(i, j));
      i = j;
    }
    out.push(truncateIdentifier(name));
    while (i < text.length && isSpace(text[i])) i++;
    if (i >= text.length) return out;
    if (text[i] !== ',') return null;
    i++;
    while (i < text.length && isSpace(text[i])) i++;
  }
}

// Converts the parser's UTF-8 byte offsets into character (code point) offsets of the SQL text.

/**
 * Maps byte offsets into the UTF-8 encoding of a string to 0-based character offsets.
 * A "character" is a Unicode code point, as Postgres counts them for an ErrorResponse POSITION
 * (pg_mbstrlen_with_len over the query text), not a JavaScript UTF-16 code unit.
 */
export interface OffsetMap {
  /** True when every character is one byte: byte offsets are then character offsets. */
  readonly ascii: boolean;
  /** Total length in characters (code points). */
  readonly charLength: number;
  /** Total length in UTF-8 bytes. */
  readonly byteLength: number;
  /**
   * The character offset of byte offset `byte`. An offset inside a multi-byte character maps to
   * that character; offsets past the end clamp to `charLength`.
   */
  toChar(byte: number): number;
}

/**
 * Builds the {@link OffsetMap} of `text`. Input: a well-formed string (no lone surrogates).
 * Output: the map; for ASCII text it is the identity and costs nothing beyond one scan.
 * Errors: none. Source: libpg-query reports `location`, `stmt_location` and `stmt_len` in bytes of
 * the UTF-8 text it was given (PostgreSQL's scanner works on bytes).
 */
export function buildOffsetMap(text: string): OffsetMap {
  if (/^[\u0000-\u007f]*$/.test(text)) {
    const n = text.length;
    return { ascii: true, charLength: n, byteLength: n, toChar: (b) => (b < 0 ? 0 : Math.min(b, n)) };
  }
  const starts: number[] = []; // byte offset at which each code point starts
  let bytes = 0;
  for (const ch of text) {
    starts.push(bytes);
    const cp = ch.codePointAt(0) ?? 0;
    bytes += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  }
  const charLength = starts.length;
  const byteLength = bytes;
  const toChar = (b: number): number => {
    if (b <= 0) return 0;
    if (b >= byteLength) return charLength;
    // Binary search: the last code point starting at or before byte b.
    let lo = 0;
    let hi = charLength - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] ?? 0) <= b) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  return { ascii: false, charLength, byteLength, toChar };
}

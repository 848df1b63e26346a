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
  // As many UTF-8 bytes as code units only when every one is ASCII (4 times faster than a regex).
  if (Buffer.byteLength(text, 'utf8') === text.length) {
    const n = text.length;
    return { ascii: true, charLength: n, byteLength: n, toChar: (b) => (b < 0 ? 0 : Math.min(b, n)) };
  }
  // One checkpoint every STRIDE code points (its code unit index and byte offset), not one number
  // per character: 8 bytes a character was 480 MB for a 60 MB statement, outside the memory budget
  // (issue 16 item 2). A lookup walks at most STRIDE code points from its checkpoint.
  const n = text.length;
  const units = new Uint32Array(Math.floor(n / STRIDE) + 2);
  const byteAt = new Uint32Array(units.length);
  let points = 0;
  let bytes = 0;
  for (let i = 0; i < n; ) {
    if (points % STRIDE === 0) {
      units[points / STRIDE] = i;
      byteAt[points / STRIDE] = bytes;
    }
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
      bytes += 4;
      i++;
    } else bytes += 3;
    i++;
    points++;
  }
  const checkpoints = Math.ceil(points / STRIDE);
  const charLength = points;
  const byteLength = bytes;
  const toChar = (b: number): number => {
    if (b <= 0) return 0;
    if (b >= byteLength) return charLength;
    // Binary search: the last checkpoint at or before byte b, then walk to the code point holding it.
    let lo = 0;
    let hi = checkpoints - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((byteAt[mid] as number) <= b) lo = mid;
      else hi = mid - 1;
    }
    let cp = lo * STRIDE;
    let i = units[lo] as number;
    let at = byteAt[lo] as number;
    for (;;) {
      const c = text.charCodeAt(i);
      const len = c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 4 : 3;
      if (at + len > b) return cp;
      at += len;
      i += len === 4 ? 2 : 1;
      cp++;
    }
  };
  return { ascii: false, charLength, byteLength, toChar };
}

/** Code points between two checkpoints of a non-ASCII {@link OffsetMap}. */
const STRIDE = 64;

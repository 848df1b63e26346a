// Protocol fields read and checked where they lie in a received chunk: no view, no reader, no copy (the relay's steady path).

/**
 * The text of a NUL-terminated ASCII string that fills `buf[start, end)` exactly (its only NUL at
 * `end - 1`), read without a view; undefined when the range holds a byte ≥ 0x80, a NUL before its
 * end, or does not end with one. Such text is valid UTF-8 and decodes to itself, so it is exactly
 * what BufferReader.cstring returns for the same bytes; anything else is left to it (the caller
 * takes the general path, which decodes and refuses what is malformed).
 * Source: PostgreSQL 15 docs, 55.6 "Message Data Types" (String).
 */
export function asciiCString(buf: Buffer, start: number, end: number): string | undefined {
  const last = end - 1;
  if (last < start || buf[last] !== 0) return undefined;
  for (let i = start; i < last; i++) {
    const b = buf[i] as number;
    if (b === 0 || b >= 0x80) return undefined;
  }
  return buf.toString('latin1', start, last);
}

/**
 * The offset just past the NUL of the ASCII String at `buf[start]` before `end`, or -1 when there is
 * no NUL before `end` or a byte ≥ 0x80 comes first (such a name is left to the general decoder).
 */
export function asciiCStringEnd(buf: Buffer, start: number, end: number): number {
  for (let i = start; i < end; i++) {
    const b = buf[i] as number;
    if (b === 0) return i + 1;
    if (b >= 0x80) return -1;
  }
  return -1;
}

/**
 * Whether the Bind ('B') message `buf[start, end)` (header included) is well formed from its
 * statement name on, as frontend.ts decodeBindNames checks it: `names` is the offset after the
 * statement name's NUL; then Int16 count of format codes each 0 or 1, Int16 count of parameters
 * each Int32 length (-1: NULL) and its bytes, a format count of 0, 1 or the parameter count, Int16
 * count of result format codes each 0 or 1, and nothing after. False for anything else (the
 * general path then refuses it with decodeBindNames's ProtocolError).
 * Source: PostgreSQL 15 docs, 55.7 "Bind".
 */
export function bindWellFormed(buf: Buffer, names: number, end: number): boolean {
  let at = names;
  const formats = formatCodesEnd(buf, at, end);
  if (formats < 0) return false;
  const nf = buf.readUInt16BE(at);
  at = formats;
  if (end - at < 2) return false;
  const n = buf.readUInt16BE(at);
  at += 2;
  for (let i = 0; i < n; i++) {
    if (end - at < 4) return false;
    const len = buf.readInt32BE(at);
    at += 4;
    if (len < -1 || len > end - at) return false;
    if (len > 0) at += len;
  }
  if (nf > 1 && nf !== n) return false;
  return formatCodesEnd(buf, at, end) === end;
}

/** The offset after an Int16 count of format codes (each 0 or 1) at `at`, or -1 when malformed. */
function formatCodesEnd(buf: Buffer, at: number, end: number): number {
  if (end - at < 2) return -1;
  const n = buf.readUInt16BE(at);
  let p = at + 2;
  if (n * 2 > end - p) return -1;
  for (let i = 0; i < n; i++, p += 2) {
    if (buf[p] !== 0 || (buf[p + 1] !== 0 && buf[p + 1] !== 1)) return -1;
  }
  return p;
}

// Masking on the wire: RowDescription types a masked column as text, DataRow carries `*****` there.
import type { ColumnOrigin } from '../sql/analysis-types.js';
import { decodeDataRow, decodeRowDescription, type FieldDescription } from '../wire/backend.js';
import { dataRow, rowDescription } from '../wire/backend-encode.js';

/** The text every masked cell becomes, NULL included, so nullness does not show (DESIGN.md "Masking"). */
export const MASK = Buffer.from('*****', 'utf8');

/** pg_type OID of `text`. */
const TEXT_OID = 25;

/**
 * Rewrites a RowDescription payload so each masked column reads as `text` (OID 25, typlen -1,
 * typmod -1) in text format, whatever Bind asked for, keeping its name and origin.
 * Returns the whole new message (header included). Throws ProtocolError 08P01 on a malformed payload.
 */
export function maskRowDescription(payload: Buffer, mask: ReadonlySet<number>): Buffer {
  const fields = decodeRowDescription(payload).map(
    (f, i): FieldDescription =>
      mask.has(i) ? { ...f, typeOid: TEXT_OID, typeSize: -1, typeModifier: -1, format: 0 } : f,
  );
  return rowDescription(fields);
}

/**
 * Rewrites a DataRow, replacing every masked field (NULL too) by `*****`. A masked column's bytes
 * are the same in text and binary format (text's binary form is its UTF-8 bytes), so a driver
 * that asked for binary decodes it too. Input: the whole message (`D`, Int32 length, payload) and
 * `alloc`, which hands out a buffer of exactly the size asked (the relay carves them out of one
 * larger buffer, so a run of masked rows is one contiguous write). Output: the new message, in
 * memory from `alloc`. A malformed message is re-encoded through the decoder, which throws
 * ProtocolError 08P01.
 */
export function maskDataRow(
  message: Buffer,
  mask: ReadonlySet<number>,
  alloc: (bytes: number) => Buffer = (n) => Buffer.allocUnsafe(n),
): Buffer {
  // DataRow: Byte1 'D', Int32 length, Int16 field count, per field Int32 length (-1 NULL) + bytes.
  const end = message.length;
  if (end < 7) return dataRow(decodeDataRow(message.subarray(5)));
  const n = message.readInt16BE(5);
  let size = 4 + 2;
  let at = 7;
  for (let i = 0; i < n; i++) {
    if (at + 4 > end) return dataRow(decodeDataRow(message.subarray(5)));
    const body = Math.max(message.readInt32BE(at), 0);
    size += 4 + (mask.has(i) ? MASK.length : body);
    at += 4 + body;
  }
  if (at !== end) return dataRow(decodeDataRow(message.subarray(5)));
  const out = alloc(1 + size);
  out[0] = 0x44; // 'D'
  out.writeInt32BE(size, 1);
  out.writeInt16BE(n, 5);
  let w = 7;
  at = 7;
  for (let i = 0; i < n; i++) {
    const body = Math.max(message.readInt32BE(at), 0);
    if (mask.has(i)) {
      out.writeInt32BE(MASK.length, w);
      for (let k = 0; k < MASK.length; k++) out[w + 4 + k] = MASK[k] as number;
      w += 4 + MASK.length;
    } else {
      copyBytes(message, at, at + 4 + body, out, w);
      w += 4 + body;
    }
    at += 4 + body;
  }
  return out;
}

/**
 * Copies `src[from, to)` to `dst` at `at`. Buffer#copy pays for a view and a native call, which
 * dominates on the short fields of a row; short spans are copied byte by byte.
 */
function copyBytes(src: Buffer, from: number, to: number, dst: Buffer, at: number): void {
  if (to - from > 64) {
    src.copy(dst, at, from, to);
    return;
  }
  for (let i = from; i < to; i++) dst[at++] = src[i] as number;
}

/**
 * Compares a RowDescription with the analysis's prediction (DESIGN.md "Compare each result
 * column's RowDescription origin with the analysis's prediction"). Returns a reason string when
 * they disagree — a different column count, or a non-zero reported origin that differs from
 * the predicted one — and null when they agree.
 */
export function originMismatch(payload: Buffer, predicted: readonly ColumnOrigin[]): string | null {
  const fields = decodeRowDescription(payload);
  if (fields.length !== predicted.length) {
    return `the server returned ${fields.length} columns where ${predicted.length} were expected`;
  }
  for (const [i, f] of fields.entries()) {
    const p = predicted[i] as ColumnOrigin;
    if (f.tableOid !== 0 && (f.tableOid !== p.tableOid || f.columnAttnum !== p.attnum)) {
      return `result column ${i + 1} ("${f.name}") comes from another column than the one analyzed`;
    }
  }
  return null;
}

/**
 * The wire's one check under mask at read (issue "Mask at read", point 3): the first result
 * column whose RowDescription origin (table OID, attnum) is a column hidden from the caller and
 * that is not masked on the wire, as a sentence; null when none. A rewritten statement reads
 * hidden columns as the mask constant (origin 0), so such a column means the text sent read a
 * hidden column as is: its rows are never sent.
 */
export function hiddenOriginColumn(
  payload: Buffer,
  isHidden: (tableOid: number, attnum: number) => boolean,
  wireMasked: ReadonlySet<number>,
): string | null {
  for (const [i, f] of decodeRowDescription(payload).entries()) {
    if (f.tableOid !== 0 && !wireMasked.has(i) && isHidden(f.tableOid, f.columnAttnum)) {
      return `result column ${i + 1} ("${f.name}") is a column hidden from you`;
    }
  }
  return null;
}

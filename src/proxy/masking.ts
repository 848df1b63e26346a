// Masking on the wire: RowDescription types a masked column as text, DataRow carries `*****` there.
import type { ColumnOrigin } from '../sql/analysis-types.js';
import {
  dataRow,
  decodeDataRow,
  decodeRowDescription,
  type FieldDescription,
  rowDescription,
} from '../wire/backend.js';

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
 * Rewrites a DataRow payload, replacing every masked field (NULL too) by `*****`. A masked
 * column's bytes are the same in text and binary format (text's binary form is its UTF-8
 * bytes), so a driver that asked for binary decodes it too. Returns the whole new message.
 */
export function maskDataRow(payload: Buffer, mask: ReadonlySet<number>): Buffer {
  const cells = decodeDataRow(payload);
  for (const i of mask) if (i < cells.length) cells[i] = MASK;
  return dataRow(cells);
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

// Decoders of server (backend) messages read upstream, and the shapes they yield (payload in, values out).
import { BufferReader } from './buffer-reader.js';

/**
 * One column of a RowDescription. OIDs unsigned; typeSize in bytes, -1 varlena, -2 cstring.
 * Source: PostgreSQL 15 docs, 55.7 "RowDescription".
 */
export interface FieldDescription {
  /** Column name (alias) as the query labels it. */
  name: string;
  /** OID of the origin table, 0 when the column is not a plain table column. */
  tableOid: number;
  /** Attribute number in the origin table, 0 when none (negative for system columns). */
  columnAttnum: number;
  typeOid: number;
  /** pg_type.typlen: bytes, or -1 varlena, -2 NUL-terminated. */
  typeSize: number;
  /** pg_attribute.atttypmod, -1 when none. */
  typeModifier: number;
  /** 0 text, 1 binary. */
  format: number;
}

/**
 * Transaction status of ReadyForQuery: idle, in a transaction block, in a failed block.
 * Source: PostgreSQL 15 docs, 55.7 "ReadyForQuery".
 */
export type TransactionStatus = 'I' | 'T' | 'E';

/**
 * Authentication request sub-codes (the Int32 after the 'R' header).
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationOk" … "AuthenticationSASLFinal".
 */
export const AuthCode = {
  Ok: 0,
  KerberosV5: 2,
  CleartextPassword: 3,
  MD5Password: 5,
  GSS: 7,
  GSSContinue: 8,
  SSPI: 9,
  SASL: 10,
  SASLContinue: 11,
  SASLFinal: 12,
} as const;

/**
 * RowDescription ('T') payload to its fields (OIDs unsigned; attnum, typlen, typmod signed).
 * Throws ProtocolError 08P01 on truncation, a count overrunning, a format other than 0/1, or
 * trailing bytes; 22021 on invalid UTF-8. Source: PostgreSQL 15 docs, 55.7 "RowDescription".
 */
export function decodeRowDescription(payload: Buffer): FieldDescription[] {
  const r = new BufferReader(payload, 'RowDescription');
  const n = r.uint16('field count');
  // Each field takes at least 19 bytes: an empty name's NUL plus 18 bytes of integers.
  if (n * 19 > r.remaining) r.fail(`${n} fields overrun the message`);
  const out: FieldDescription[] = [];
  for (let i = 0; i < n; i++) {
    const name = r.cstring('field name');
    const tableOid = r.uint32('table OID');
    const columnAttnum = r.int16('column attribute number');
    const typeOid = r.uint32('type OID');
    const typeSize = r.int16('type size');
    const typeModifier = r.int32('type modifier');
    const format = r.int16('format code');
    if (format !== 0 && format !== 1) r.fail(`invalid format code ${format}`);
    out.push({ name, tableOid, columnAttnum, typeOid, typeSize, typeModifier, format });
  }
  r.end();
  return out;
}

/**
 * DataRow ('D') payload to its cells: subarrays of the payload (no copies), null for SQL NULL.
 * Throws ProtocolError 08P01 on truncation, a count or length overrunning, a length below -1, or
 * trailing bytes. Source: PostgreSQL 15 docs, 55.7 "DataRow".
 */
export function decodeDataRow(payload: Buffer): (Buffer | null)[] {
  const r = new BufferReader(payload, 'DataRow');
  const n = r.uint16('column count');
  if (n * 4 > r.remaining) r.fail(`${n} columns overrun the message`);
  const out: (Buffer | null)[] = [];
  for (let i = 0; i < n; i++) {
    const len = r.int32('column length');
    if (len === -1) out.push(null);
    else if (len < -1) r.fail(`invalid column length ${len}`);
    else out.push(r.bytes(len, 'column value'));
  }
  r.end();
  return out;
}

/**
 * ReadyForQuery ('Z') payload: exactly one byte 'I', 'T' or 'E'. Throws ProtocolError 08P01
 * otherwise. Source: PostgreSQL 15 docs, 55.7 "ReadyForQuery".
 */
export function decodeReadyForQuery(payload: Buffer): TransactionStatus {
  const r = new BufferReader(payload, 'ReadyForQuery');
  const b = r.byte('transaction status');
  r.end();
  if (b === 0x49) return 'I';
  if (b === 0x54) return 'T';
  if (b === 0x45) return 'E';
  return r.fail(`invalid transaction status 0x${b.toString(16)}`);
}

/**
 * A decoded Authentication ('R') message; `other` covers Kerberos, GSS, SSPI and unknown codes.
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationOk" … "AuthenticationSASLFinal".
 */
export type AuthenticationMessage =
  | { readonly type: 'ok' }
  | { readonly type: 'cleartext' }
  | { readonly type: 'md5'; readonly salt: Buffer }
  | { readonly type: 'sasl'; readonly mechanisms: string[] }
  | { readonly type: 'sasl-continue'; readonly data: Buffer }
  | { readonly type: 'sasl-final'; readonly data: Buffer }
  | { readonly type: 'other'; readonly code: number };

/**
 * Authentication ('R') payload: Int32 sub-code then sub-code-specific data (salt and SASL data
 * are subarrays, no copies). Throws ProtocolError 08P01 on truncation, trailing bytes after a
 * fixed-size form, an empty or unterminated SASL mechanism list; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationOk" … "AuthenticationSASLFinal".
 */
export function decodeAuthentication(payload: Buffer): AuthenticationMessage {
  const r = new BufferReader(payload, 'Authentication');
  const code = r.int32('authentication code');
  switch (code) {
    case AuthCode.Ok:
      r.end();
      return { type: 'ok' };
    case AuthCode.CleartextPassword:
      r.end();
      return { type: 'cleartext' };
    case AuthCode.MD5Password: {
      const salt = r.bytes(4, 'salt');
      r.end();
      return { type: 'md5', salt };
    }
    case AuthCode.SASL: {
      const mechanisms: string[] = [];
      for (;;) {
        const m = r.cstring('SASL mechanism');
        if (m === '') break;
        mechanisms.push(m);
      }
      r.end();
      if (mechanisms.length === 0) r.fail('empty SASL mechanism list');
      return { type: 'sasl', mechanisms };
    }
    case AuthCode.SASLContinue:
      return { type: 'sasl-continue', data: r.rest() };
    case AuthCode.SASLFinal:
      return { type: 'sasl-final', data: r.rest() };
    default:
      return { type: 'other', code };
  }
}

/**
 * BackendKeyData ('K') payload: Int32 process ID, Int32 secret key (both returned signed), exactly
 * 8 bytes. Throws ProtocolError 08P01 otherwise. Source: PostgreSQL 15 docs, 55.7 "BackendKeyData".
 */
export function decodeBackendKeyData(payload: Buffer): { processId: number; secretKey: number } {
  const r = new BufferReader(payload, 'BackendKeyData');
  const processId = r.int32('process ID');
  const secretKey = r.int32('secret key');
  r.end();
  return { processId, secretKey };
}

/**
 * ParameterStatus ('S') payload: String name, String value. Throws ProtocolError 08P01 on a
 * missing NUL or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "ParameterStatus".
 */
export function decodeParameterStatus(payload: Buffer): { name: string; value: string } {
  const r = new BufferReader(payload, 'ParameterStatus');
  const name = r.cstring('parameter name');
  const value = r.cstring('parameter value');
  r.end();
  return { name, value };
}

/**
 * CommandComplete ('C') payload: String command tag. Throws ProtocolError 08P01 on a missing NUL
 * or trailing bytes; 22021 on invalid UTF-8. Source: PostgreSQL 15 docs, 55.7 "CommandComplete".
 */
export function decodeCommandComplete(payload: Buffer): string {
  const r = new BufferReader(payload, 'CommandComplete');
  const tag = r.cstring('command tag');
  r.end();
  return tag;
}

/**
 * ParameterDescription ('t') payload: Int16 count then count × Int32 type OID (unsigned).
 * Throws ProtocolError 08P01 on a count overrunning or trailing bytes.
 * Source: PostgreSQL 15 docs, 55.7 "ParameterDescription".
 */
export function decodeParameterDescription(payload: Buffer): number[] {
  const r = new BufferReader(payload, 'ParameterDescription');
  const n = r.uint16('parameter count');
  if (n * 4 > r.remaining) r.fail(`${n} parameter types overrun the message`);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(r.uint32('parameter type'));
  r.end();
  return out;
}

/**
 * NegotiateProtocolVersion ('v') payload: Int32 newest supported minor version, Int32 count,
 * count × String option name. Throws ProtocolError 08P01 on truncation, a negative count or
 * trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "NegotiateProtocolVersion".
 */
export function decodeNegotiateProtocolVersion(payload: Buffer): { minor: number; unsupported: string[] } {
  const r = new BufferReader(payload, 'NegotiateProtocolVersion');
  const minor = r.int32('minor version');
  const n = r.int32('option count');
  if (n < 0 || n > r.remaining) r.fail(`invalid option count ${n}`);
  const unsupported: string[] = [];
  for (let i = 0; i < n; i++) unsupported.push(r.cstring('option name'));
  r.end();
  return { minor, unsupported };
}

/**
 * NotificationResponse ('A') payload: Int32 notifying process ID, String channel, String payload.
 * Throws ProtocolError 08P01 on truncation or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "NotificationResponse".
 */
export function decodeNotificationResponse(payload: Buffer): {
  processId: number;
  channel: string;
  payload: string;
} {
  const r = new BufferReader(payload, 'NotificationResponse');
  const processId = r.int32('process ID');
  const channel = r.cstring('channel');
  const text = r.cstring('payload');
  r.end();
  return { processId, channel, payload: text };
}

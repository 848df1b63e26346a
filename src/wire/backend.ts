// Encoders and decoders of server (backend) messages: what the proxy sends clients and reads upstream.
import { BufferReader } from './buffer-reader.js';
import { BufferWriter } from './buffer-writer.js';
import { BackendCode } from './codes.js';
import { ProtocolError } from './protocol-error.js';

/**
 * Severities an ErrorResponse/NoticeResponse carries in its non-localized 'V' field.
 * Source: PostgreSQL 15 docs, 55.8 "Error and Notice Message Fields" (field V).
 */
export type Severity = 'ERROR' | 'FATAL' | 'PANIC' | 'WARNING' | 'NOTICE' | 'DEBUG' | 'INFO' | 'LOG';

const SEVERITIES: ReadonlySet<string> = new Set<Severity>([
  'ERROR',
  'FATAL',
  'PANIC',
  'WARNING',
  'NOTICE',
  'DEBUG',
  'INFO',
  'LOG',
]);

/**
 * The fields of an ErrorResponse or NoticeResponse.
 * `severity` is the non-localized 'V' field; `localizedSeverity` the 'S' field when it differs
 * (lc_messages other than English). `position`/`internalPosition` are 1-based character indexes.
 * `unknownFields` holds only field codes this module does not name (future additions), keyed by
 * the one-letter code, so re-encoding preserves them; named fields never appear there, so
 * deleting e.g. `detail` really removes the 'D' field.
 * Source: PostgreSQL 15 docs, 55.8 "Error and Notice Message Fields".
 */
export interface ErrorFields {
  severity: Severity;
  localizedSeverity?: string;
  code: string;
  message: string;
  detail?: string;
  hint?: string;
  position?: number;
  internalPosition?: number;
  internalQuery?: string;
  where?: string;
  schema?: string;
  table?: string;
  column?: string;
  dataType?: string;
  constraint?: string;
  file?: string;
  line?: string;
  routine?: string;
  unknownFields?: Map<string, string>;
}

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

// ---------------------------------------------------------------------------------------------
// Encoders. Each returns one whole message (type byte, Int32 length, payload).

/**
 * AuthenticationOk: `52 00000008 00000000` (9 bytes). Never throws.
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationOk".
 */
export function authenticationOk(): Buffer {
  return new BufferWriter(BackendCode.Authentication, 4).int32(AuthCode.Ok).finish();
}

/**
 * AuthenticationCleartextPassword (9 bytes): asks the client for its password in clear (only over
 * TLS, per DESIGN.md). Never throws. Source: PostgreSQL 15 docs, 55.7 "AuthenticationCleartextPassword".
 */
export function authenticationCleartextPassword(): Buffer {
  return new BufferWriter(BackendCode.Authentication, 4).int32(AuthCode.CleartextPassword).finish();
}

/**
 * AuthenticationMD5Password: Int32 5 then the 4-byte salt. Throws ProtocolError 08P01 when the
 * salt is not 4 bytes. Source: PostgreSQL 15 docs, 55.7 "AuthenticationMD5Password".
 */
export function authenticationMD5Password(salt: Buffer): Buffer {
  if (salt.length !== 4) throw new ProtocolError('MD5 salt must be 4 bytes');
  return new BufferWriter(BackendCode.Authentication, 8).int32(AuthCode.MD5Password).bytes(salt).finish();
}

/**
 * AuthenticationSASL: Int32 10, each mechanism name as a String, then an empty String.
 * Throws ProtocolError 08P01 on an empty name or one containing NUL (either would end the list).
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationSASL".
 */
export function authenticationSASL(mechanisms: string[]): Buffer {
  const w = new BufferWriter(BackendCode.Authentication, 32).int32(AuthCode.SASL);
  for (const m of mechanisms) {
    if (m === '') throw new ProtocolError('empty SASL mechanism name');
    w.cstring(m);
  }
  return w.byte(0).finish();
}

/**
 * AuthenticationSASLContinue: Int32 11 then the SASL challenge bytes (server-first-message).
 * Throws ProtocolError 54000 only when the message would exceed 2^31-1 bytes.
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationSASLContinue".
 */
export function authenticationSASLContinue(data: Buffer): Buffer {
  return new BufferWriter(BackendCode.Authentication, 4 + data.length)
    .int32(AuthCode.SASLContinue)
    .bytes(data)
    .finish();
}

/**
 * AuthenticationSASLFinal: Int32 12 then the SASL outcome bytes (server-final-message).
 * Throws ProtocolError 54000 only when the message would exceed 2^31-1 bytes.
 * Source: PostgreSQL 15 docs, 55.7 "AuthenticationSASLFinal".
 */
export function authenticationSASLFinal(data: Buffer): Buffer {
  return new BufferWriter(BackendCode.Authentication, 4 + data.length)
    .int32(AuthCode.SASLFinal)
    .bytes(data)
    .finish();
}

/**
 * ParameterStatus ('S'): String name, String value. Throws ProtocolError 08P01 when either
 * contains NUL. Source: PostgreSQL 15 docs, 55.7 "ParameterStatus".
 */
export function parameterStatus(name: string, value: string): Buffer {
  return new BufferWriter(BackendCode.ParameterStatus).cstring(name).cstring(value).finish();
}

/**
 * BackendKeyData ('K'): Int32 process ID, Int32 secret key (signed or unsigned 32-bit input; the
 * bit pattern is what counts); 13 bytes. Never throws. Source: PostgreSQL 15 docs, 55.7 "BackendKeyData".
 */
export function backendKeyData(processId: number, secretKey: number): Buffer {
  return new BufferWriter(BackendCode.BackendKeyData, 8).int32(processId).int32(secretKey).finish();
}

/**
 * ReadyForQuery ('Z'): Byte1 transaction status; readyForQuery('I') is `5a 00000005 49`.
 * Never throws.
 * Source: PostgreSQL 15 docs, 55.7 "ReadyForQuery".
 */
export function readyForQuery(status: TransactionStatus): Buffer {
  return new BufferWriter(BackendCode.ReadyForQuery, 1).byte(status.charCodeAt(0)).finish();
}

/** Field codes in the order Postgres' send_message_to_frontend writes them. */
const FIELD_CODES: ReadonlyArray<readonly [string, keyof ErrorFields]> = [
  ['C', 'code'],
  ['M', 'message'],
  ['D', 'detail'],
  ['H', 'hint'],
  ['P', 'position'],
  ['p', 'internalPosition'],
  ['q', 'internalQuery'],
  ['W', 'where'],
  ['s', 'schema'],
  ['t', 'table'],
  ['c', 'column'],
  ['d', 'dataType'],
  ['n', 'constraint'],
  ['F', 'file'],
  ['L', 'line'],
  ['R', 'routine'],
];
const KNOWN_CODES: ReadonlyMap<string, keyof ErrorFields> = new Map([
  ['S', 'localizedSeverity'],
  ['V', 'severity'],
  ...FIELD_CODES,
]);

function encodeFields(code: number, f: ErrorFields): Buffer {
  const w = new BufferWriter(code, 128);
  w.byte(0x53).cstring(f.localizedSeverity ?? f.severity);
  w.byte(0x56).cstring(f.severity);
  for (const [c, key] of FIELD_CODES) {
    const v = f[key];
    if (v === undefined) continue;
    w.byte(c.charCodeAt(0)).cstring(String(v));
  }
  if (f.unknownFields) {
    for (const [c, v] of f.unknownFields) {
      if (c.length !== 1 || c === '\0' || KNOWN_CODES.has(c)) {
        throw new ProtocolError(`invalid or named error field code ${JSON.stringify(c)} in unknownFields`);
      }
      w.byte(c.charCodeAt(0)).cstring(v);
    }
  }
  return w.byte(0).finish();
}

/**
 * ErrorResponse ('E'): S (localized severity), V (severity), then each present field as Byte1
 * code + String, then a NUL. Throws ProtocolError 08P01 when a value contains NUL or an
 * `unknownFields` key is not a single unnamed code.
 * Source: PostgreSQL 15 docs, 55.7 "ErrorResponse" and 55.8 "Error and Notice Message Fields".
 */
export function errorResponse(fields: ErrorFields): Buffer {
  return encodeFields(BackendCode.ErrorResponse, fields);
}

/**
 * NoticeResponse ('N'): same layout and errors as errorResponse.
 * Source: PostgreSQL 15 docs, 55.7 "NoticeResponse" and 55.8.
 */
export function noticeResponse(fields: ErrorFields): Buffer {
  return encodeFields(BackendCode.NoticeResponse, fields);
}

/**
 * NegotiateProtocolVersion ('v'): Int32 newest minor version supported for the requested major,
 * Int32 count, then each unrecognized protocol option name (`_pq_.…`) as a String.
 * Throws ProtocolError 08P01 when a name contains NUL.
 * Source: PostgreSQL 15 docs, 55.7 "NegotiateProtocolVersion".
 */
export function negotiateProtocolVersion(minor: number, unsupported: string[]): Buffer {
  const w = new BufferWriter(BackendCode.NegotiateProtocolVersion, 16).int32(minor).int32(unsupported.length);
  for (const o of unsupported) w.cstring(o);
  return w.finish();
}

/**
 * RowDescription ('T'): Int16 count, then per field String name, Int32 table OID, Int16 attnum,
 * Int32 type OID, Int16 typlen, Int32 typmod, Int16 format. Throws ProtocolError 08P01 when a
 * name contains NUL, 54000 for more than 65535 fields. Source: PostgreSQL 15 docs, 55.7 "RowDescription".
 */
export function rowDescription(fields: FieldDescription[]): Buffer {
  const w = new BufferWriter(BackendCode.RowDescription, 2 + fields.length * 32).count16(fields.length);
  for (const f of fields) {
    w.cstring(f.name)
      .int32(f.tableOid)
      .int16(f.columnAttnum)
      .int32(f.typeOid)
      .int16(f.typeSize)
      .int32(f.typeModifier)
      .int16(f.format);
  }
  return w.finish();
}

/**
 * DataRow ('D'): Int16 count, then per cell Int32 length in bytes (-1 for NULL) and the bytes.
 * Throws ProtocolError 54000 for more than 65535 cells or a message over 2^31-1 bytes.
 * Source: PostgreSQL 15 docs, 55.7 "DataRow".
 */
export function dataRow(cells: (Buffer | null)[]): Buffer {
  let size = 2;
  for (const c of cells) size += 4 + (c ? c.length : 0);
  const w = new BufferWriter(BackendCode.DataRow, size).count16(cells.length);
  for (const c of cells) {
    if (c === null) w.int32(-1);
    else w.int32(c.length).bytes(c);
  }
  return w.finish();
}

/**
 * CommandComplete ('C'): String command tag, e.g. `SELECT 3`, `INSERT 0 1`. Throws ProtocolError
 * 08P01 when the tag contains NUL. Source: PostgreSQL 15 docs, 55.7 "CommandComplete".
 */
export function commandComplete(tag: string): Buffer {
  return new BufferWriter(BackendCode.CommandComplete).cstring(tag).finish();
}

/** EmptyQueryResponse ('I'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "EmptyQueryResponse". */
export function emptyQueryResponse(): Buffer {
  return new BufferWriter(BackendCode.EmptyQueryResponse, 0).finish();
}

/** NoData ('n'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "NoData". */
export function noData(): Buffer {
  return new BufferWriter(BackendCode.NoData, 0).finish();
}

/** ParseComplete ('1'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "ParseComplete". */
export function parseComplete(): Buffer {
  return new BufferWriter(BackendCode.ParseComplete, 0).finish();
}

/** BindComplete ('2'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "BindComplete". */
export function bindComplete(): Buffer {
  return new BufferWriter(BackendCode.BindComplete, 0).finish();
}

/** CloseComplete ('3'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "CloseComplete". */
export function closeComplete(): Buffer {
  return new BufferWriter(BackendCode.CloseComplete, 0).finish();
}

/** PortalSuspended ('s'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "PortalSuspended". */
export function portalSuspended(): Buffer {
  return new BufferWriter(BackendCode.PortalSuspended, 0).finish();
}

/**
 * ParameterDescription ('t'): Int16 count, then each parameter type OID as Int32.
 * Throws ProtocolError 54000 for more than 65535 types.
 * Source: PostgreSQL 15 docs, 55.7 "ParameterDescription".
 */
export function parameterDescription(typeOids: number[]): Buffer {
  const w = new BufferWriter(BackendCode.ParameterDescription, 2 + typeOids.length * 4).count16(
    typeOids.length,
  );
  for (const t of typeOids) w.int32(t);
  return w.finish();
}

/**
 * The single byte 'N' answering SSLRequest or GSSENCRequest with "no encryption"; it has no
 * header (1 byte). Never throws. Source: PostgreSQL 15 docs, 55.2.11 "SSL Session Encryption".
 */
export function sslRefused(): Buffer {
  return Buffer.from([0x4e]);
}

// ---------------------------------------------------------------------------------------------
// Decoders (payload in: the Frame's bytes after the header).

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
 * ErrorResponse ('E') or NoticeResponse ('N') payload to its fields. Unnamed field codes go to
 * `unknownFields`; `localizedSeverity` is set only when 'S' differs from 'V'.
 * Throws ProtocolError 08P01 on a missing NUL, a missing final NUL, trailing bytes, a missing
 * severity/code/message, an unknown severity (when 'V' is absent, 'S' must be one), a duplicated
 * field code, or a non-numeric position; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "ErrorResponse", 55.8 "Error and Notice Message Fields".
 */
export function decodeErrorResponse(payload: Buffer): ErrorFields {
  const r = new BufferReader(payload, 'ErrorResponse');
  const raw = new Map<string, string>();
  for (;;) {
    const c = r.byte('field type');
    if (c === 0) break;
    const code = String.fromCharCode(c);
    const value = r.cstring(`field ${code}`);
    if (raw.has(code)) r.fail(`duplicate field ${code}`);
    raw.set(code, value);
  }
  r.end();
  const s = raw.get('S');
  const v = raw.get('V');
  let severity: Severity;
  if (v !== undefined) {
    if (!SEVERITIES.has(v)) r.fail(`unknown severity ${JSON.stringify(v)}`);
    severity = v as Severity;
  } else {
    if (s === undefined || !SEVERITIES.has(s)) r.fail('missing or unknown severity');
    severity = s as Severity;
  }
  const code = raw.get('C');
  const message = raw.get('M');
  if (code === undefined) return r.fail('missing SQLSTATE code');
  if (message === undefined) return r.fail('missing message');
  const out: ErrorFields = { severity, code, message };
  if (s !== undefined && s !== severity) out.localizedSeverity = s;
  const unknown = new Map<string, string>();
  for (const [c, val] of raw) {
    const key = KNOWN_CODES.get(c);
    if (key === undefined) {
      unknown.set(c, val);
      continue;
    }
    switch (key) {
      case 'severity':
      case 'localizedSeverity':
      case 'code':
      case 'message':
        break;
      case 'position':
      case 'internalPosition':
        if (!/^[0-9]{1,10}$/.test(val)) r.fail(`non-numeric position ${JSON.stringify(val)}`);
        out[key] = Number(val);
        break;
      case 'unknownFields':
        break;
      default:
        out[key] = val;
    }
  }
  if (unknown.size > 0) out.unknownFields = unknown;
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

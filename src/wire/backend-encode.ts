// Encoders of server (backend) messages the proxy sends clients: each returns one whole message.
import { AuthCode, type FieldDescription, type TransactionStatus } from './backend.js';
import { BufferWriter } from './buffer-writer.js';
import { BackendCode } from './codes.js';
import { ProtocolError } from './protocol-error.js';

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

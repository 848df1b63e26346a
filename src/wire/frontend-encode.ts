// Encoders of client (frontend) messages, for the proxy's upstream side and for tests.
import { BufferWriter } from './buffer-writer.js';
import { FrontendCode, StartupCode } from './codes.js';
import { ProtocolError } from './protocol-error.js';

/**
 * StartupMessage (untyped): Int32 length, Int32 version (major << 16 | minor, default 3.0), each
 * parameter as name String + value String, then a NUL. Sends exactly `params`, in Map order
 * (unlike pg-protocol's `serialize.startup`, which appends client_encoding itself).
 * Throws ProtocolError 08P01 on an empty name or a NUL inside a name or value.
 * Source: PostgreSQL 15 docs, 55.7 "StartupMessage".
 */
export function startupMessage(params: ReadonlyMap<string, string>, minor = 0): Buffer {
  const w = new BufferWriter(0, 64).int32(StartupCode.Protocol3 + minor);
  for (const [k, v] of params) {
    if (k === '') throw new ProtocolError('empty startup parameter name');
    w.cstring(k).cstring(v);
  }
  return w.byte(0).finish();
}

/**
 * CancelRequest (untyped, 16 bytes): Int32 16, Int32 80877102, Int32 process ID, Int32 secret key.
 * Never throws.
 * Source: PostgreSQL 15 docs, 55.7 "CancelRequest".
 */
export function cancelRequest(processId: number, secretKey: number): Buffer {
  return new BufferWriter(0, 12).int32(StartupCode.CancelRequest).int32(processId).int32(secretKey).finish();
}

/**
 * SSLRequest (untyped, 8 bytes): `00000008 04d2162f`. Never throws.
 * Source: PostgreSQL 15 docs, 55.7 "SSLRequest".
 */
export function sslRequest(): Buffer {
  return new BufferWriter(0, 4).int32(StartupCode.SSLRequest).finish();
}

/**
 * GSSENCRequest (untyped, 8 bytes): `00000008 04d21630`. Never throws.
 * Source: PostgreSQL 15 docs, 55.7 "GSSENCRequest".
 */
export function gssencRequest(): Buffer {
  return new BufferWriter(0, 4).int32(StartupCode.GSSENCRequest).finish();
}

/**
 * Query ('Q'): String sql. Throws ProtocolError 08P01 when `sql` contains NUL.
 * Source: PostgreSQL 15 docs, 55.7 "Query".
 */
export function query(sql: string): Buffer {
  return new BufferWriter(FrontendCode.Query, sql.length + 1).cstring(sql).finish();
}

/**
 * Parse ('P'): String name, String sql, Int16 count, count × Int32 type OID (0 = unspecified).
 * Throws ProtocolError 08P01 on a NUL in a string or more than 65535 types.
 * Source: PostgreSQL 15 docs, 55.7 "Parse".
 */
export function parse(name: string, sql: string, paramTypes: readonly number[] = []): Buffer {
  if (paramTypes.length > 0xffff) throw new ProtocolError('too many parameter types', '54000');
  const w = new BufferWriter(FrontendCode.Parse, name.length + sql.length + 4 + paramTypes.length * 4)
    .cstring(name)
    .cstring(sql)
    .int16(paramTypes.length);
  for (const t of paramTypes) w.int32(t);
  return w.finish();
}

/**
 * Inputs of `bind`; formats as in the Bind message (0 text, 1 binary; 0, 1 or n entries).
 * Source: PostgreSQL 15 docs, 55.7 "Bind".
 */
export interface BindInput {
  readonly portal?: string;
  readonly statement?: string;
  readonly paramFormats?: readonly number[];
  readonly params?: readonly (Buffer | null)[];
  readonly resultFormats?: readonly number[];
}

/**
 * Bind ('B'): String portal, String statement, Int16 n + formats, Int16 n + (Int32 length or -1,
 * bytes) per parameter, Int16 n + result formats. Values are sent as given (no type mapping,
 * unlike pg-protocol's `serialize.bind`). Throws ProtocolError 54000 on more than 65535 entries in
 * a list, 08P01 on a NUL in a name.
 * Source: PostgreSQL 15 docs, 55.7 "Bind".
 */
export function bind(input: BindInput): Buffer {
  const paramFormats = input.paramFormats ?? [];
  const params = input.params ?? [];
  const resultFormats = input.resultFormats ?? [];
  if (Math.max(paramFormats.length, params.length, resultFormats.length) > 0xffff) {
    throw new ProtocolError('too many Bind entries', '54000');
  }
  let size = 16 + paramFormats.length * 2 + resultFormats.length * 2;
  for (const p of params) size += 4 + (p ? p.length : 0);
  const w = new BufferWriter(FrontendCode.Bind, size)
    .cstring(input.portal ?? '')
    .cstring(input.statement ?? '');
  w.int16(paramFormats.length);
  for (const f of paramFormats) w.int16(f);
  w.int16(params.length);
  for (const p of params) {
    if (p === null) w.int32(-1);
    else w.int32(p.length).bytes(p);
  }
  w.int16(resultFormats.length);
  for (const f of resultFormats) w.int16(f);
  return w.finish();
}

/**
 * Describe ('D'): Byte1 'S' or 'P', String name. Throws ProtocolError 08P01 on a NUL in `name`.
 * Source: PostgreSQL 15 docs, 55.7 "Describe".
 */
export function describe(target: 'S' | 'P', name = ''): Buffer {
  return new BufferWriter(FrontendCode.Describe).byte(target.charCodeAt(0)).cstring(name).finish();
}

/**
 * Close ('C'): Byte1 'S' or 'P', String name. Throws ProtocolError 08P01 on a NUL in `name`.
 * Source: PostgreSQL 15 docs, 55.7 "Close".
 */
export function close(target: 'S' | 'P', name = ''): Buffer {
  return new BufferWriter(FrontendCode.Close).byte(target.charCodeAt(0)).cstring(name).finish();
}

/**
 * Execute ('E'): String portal, Int32 row limit (0 = all). Throws ProtocolError 08P01 on a NUL in
 * `portal`. Source: PostgreSQL 15 docs, 55.7 "Execute".
 */
export function execute(portal = '', maxRows = 0): Buffer {
  return new BufferWriter(FrontendCode.Execute).cstring(portal).int32(maxRows).finish();
}

/** Sync ('S'), no payload: `53 00000004`. Never throws. Source: PostgreSQL 15 docs, 55.7 "Sync". */
export function sync(): Buffer {
  return new BufferWriter(FrontendCode.Sync, 0).finish();
}

/** Flush ('H'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "Flush". */
export function flush(): Buffer {
  return new BufferWriter(FrontendCode.Flush, 0).finish();
}

/** Terminate ('X'), no payload (5 bytes). Never throws. Source: PostgreSQL 15 docs, 55.7 "Terminate". */
export function terminate(): Buffer {
  return new BufferWriter(FrontendCode.Terminate, 0).finish();
}

/**
 * PasswordMessage ('p'): String password. Throws ProtocolError 08P01 on a NUL in it.
 * Source: PostgreSQL 15 docs, 55.7 "PasswordMessage".
 */
export function passwordMessage(password: string): Buffer {
  return new BufferWriter(FrontendCode.Password).cstring(password).finish();
}

/**
 * SASLInitialResponse ('p'): String mechanism, Int32 length (-1 when `data` is null), data bytes.
 * Throws ProtocolError 08P01 on a NUL in `mechanism`.
 * Source: PostgreSQL 15 docs, 55.7 "SASLInitialResponse".
 */
export function saslInitialResponse(mechanism: string, data: Buffer | null): Buffer {
  const w = new BufferWriter(FrontendCode.Password, mechanism.length + 5 + (data?.length ?? 0)).cstring(
    mechanism,
  );
  if (data === null) w.int32(-1);
  else w.int32(data.length).bytes(data);
  return w.finish();
}

/**
 * SASLResponse ('p'): the SASL data as the whole payload. Throws ProtocolError 54000 only over
 * 2^31-1 bytes. Source: PostgreSQL 15 docs, 55.7 "SASLResponse".
 */
export function saslResponse(data: Buffer): Buffer {
  return new BufferWriter(FrontendCode.Password, data.length).bytes(data).finish();
}

/**
 * CopyData ('d'): the data as the whole payload (same layout both directions). Throws
 * ProtocolError 54000 only over 2^31-1 bytes. Source: PostgreSQL 15 docs, 55.7 "CopyData".
 */
export function copyData(data: Buffer): Buffer {
  return new BufferWriter(FrontendCode.CopyData, data.length).bytes(data).finish();
}

/**
 * CopyDone ('c'), no payload (5 bytes; same layout both directions). Never throws.
 * Source: PostgreSQL 15 docs, 55.7 "CopyDone".
 */
export function copyDone(): Buffer {
  return new BufferWriter(FrontendCode.CopyDone, 0).finish();
}

/**
 * CopyFail ('f'): String error message. Throws ProtocolError 08P01 on a NUL in it.
 * Source: PostgreSQL 15 docs, 55.7 "CopyFail".
 */
export function copyFail(message: string): Buffer {
  return new BufferWriter(FrontendCode.CopyFail).cstring(message).finish();
}

// Decoders of client (frontend) messages: payload bytes in, plain values out.
import { BufferReader } from './buffer-reader.js';
import { StartupCode } from './codes.js';
import { ProtocolError } from './protocol-error.js';

/**
 * A decoded untyped startup-phase packet.
 * `startup.params` keeps the client's order (Map insertion order); names are never empty.
 * Source: PostgreSQL 15 docs, 55.7 (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest).
 */
export type StartupPacket =
  | { readonly kind: 'ssl' }
  | { readonly kind: 'gssenc' }
  | { readonly kind: 'cancel'; readonly processId: number; readonly secretKey: number }
  | {
      readonly kind: 'startup';
      readonly major: number;
      readonly minor: number;
      readonly params: Map<string, string>;
    };

/**
 * Decodes the payload of an untyped startup-phase frame (the bytes after the Int32 length).
 * - SSLRequest / GSSENCRequest: exactly the Int32 code (payload 4 bytes).
 * - CancelRequest: code, Int32 process ID, Int32 secret key (payload 12 bytes; keys are signed).
 * - StartupMessage: Int32 version (major << 16 | minor), then name/value String pairs ended by a
 *   single NUL, which must be the last byte.
 * Throws ProtocolError 08P01 on a wrong size, truncation, missing terminator, empty parameter
 * name, or duplicate parameter name (Postgres lets the last one win; a filtering proxy must not
 * see one value while Postgres sees another); 0A000 when the major version is not 3; 22021 on
 * invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest).
 */
export function decodeStartupPacket(payload: Buffer): StartupPacket {
  const r = new BufferReader(payload, 'startup');
  const code = r.int32('protocol version');
  if (code === StartupCode.SSLRequest || code === StartupCode.GSSENCRequest) {
    r.end();
    return { kind: code === StartupCode.SSLRequest ? 'ssl' : 'gssenc' };
  }
  if (code === StartupCode.CancelRequest) {
    const processId = r.int32('process ID');
    const secretKey = r.int32('secret key');
    r.end();
    return { kind: 'cancel', processId, secretKey };
  }
  const major = code >>> 16;
  const minor = code & 0xffff;
  if (major !== 3) {
    throw new ProtocolError(
      `unsupported frontend protocol ${major}.${minor}: server supports 3.0 to 3.0`,
      '0A000',
    );
  }
  const params = new Map<string, string>();
  for (;;) {
    if (r.remaining === 0) r.fail('expected terminator as last byte');
    if (payload[r.offset] === 0) {
      r.byte();
      break;
    }
    const name = r.cstring('parameter name');
    const value = r.cstring('parameter value');
    if (params.has(name)) r.fail(`duplicate startup parameter "${name}"`);
    params.set(name, value);
  }
  if (r.remaining !== 0) r.fail('expected terminator as last byte');
  return { kind: 'startup', major, minor, params };
}

/**
 * Query ('Q'): String sql. Throws ProtocolError 08P01 on a missing NUL or trailing bytes, 22021
 * on invalid UTF-8. Source: PostgreSQL 15 docs, 55.7 "Query".
 */
export function decodeQuery(payload: Buffer): { sql: string } {
  const r = new BufferReader(payload, 'Query');
  const sql = r.cstring('query string');
  r.end();
  return { sql };
}

/**
 * Parse ('P'): String statement name, String sql, Int16 count, count × Int32 parameter type OID
 * (0 = unspecified; returned unsigned). Throws ProtocolError 08P01 on truncation, a count
 * overrunning the payload, or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "Parse".
 */
export function decodeParse(payload: Buffer): { name: string; sql: string; paramTypes: number[] } {
  const r = new BufferReader(payload, 'Parse');
  const name = r.cstring('statement name');
  const sql = r.cstring('query string');
  const n = r.uint16('parameter type count');
  if (n * 4 > r.remaining) r.fail(`${n} parameter types overrun the message`);
  const paramTypes: number[] = [];
  for (let i = 0; i < n; i++) paramTypes.push(r.uint32('parameter type'));
  r.end();
  return { name, sql, paramTypes };
}

/**
 * Decoded Bind message; `params` are subarrays of the payload (no copies), null for SQL NULL.
 * Source: PostgreSQL 15 docs, 55.7 "Bind".
 */
export interface BindMessage {
  readonly portal: string;
  readonly statement: string;
  /** 0 entries (all text), 1 (applies to all) or one per parameter; each 0 text or 1 binary. */
  readonly paramFormats: number[];
  readonly params: (Buffer | null)[];
  /** 0 entries (all text), 1 (applies to all) or one per result column; each 0 or 1. */
  readonly resultFormats: number[];
}

/**
 * Bind ('B'): String portal, String statement, Int16 n + n × Int16 parameter format codes,
 * Int16 n + n × (Int32 length, -1 for NULL, then that many bytes), Int16 n + n × Int16 result
 * format codes.
 * Throws ProtocolError 08P01 on truncation, a count or value length overrunning the payload, a
 * length below -1, a parameter format count that is neither 0, 1 nor the parameter count (as
 * Postgres checks), or trailing bytes; 22023 for a format code other than 0/1; 22021 on invalid
 * UTF-8 names.
 * Source: PostgreSQL 15 docs, 55.7 "Bind".
 */
export function decodeBind(payload: Buffer): BindMessage {
  const r = new BufferReader(payload, 'Bind');
  const portal = r.cstring('portal name');
  const statement = r.cstring('statement name');
  const paramFormats = readFormats(r, 'parameter');
  const n = r.uint16('parameter count');
  if (n * 4 > r.remaining) r.fail(`${n} parameters overrun the message`);
  const params: (Buffer | null)[] = [];
  for (let i = 0; i < n; i++) {
    const len = r.int32('parameter length');
    if (len === -1) params.push(null);
    else if (len < -1) r.fail(`invalid parameter length ${len}`);
    else params.push(r.bytes(len, 'parameter value'));
  }
  if (paramFormats.length > 1 && paramFormats.length !== n) {
    r.fail(`bind message has ${paramFormats.length} parameter formats but ${n} parameters`);
  }
  const resultFormats = readFormats(r, 'result');
  r.end();
  return { portal, statement, paramFormats, params, resultFormats };
}

/**
 * The names of a Bind ('B'), checked exactly as {@link decodeBind} checks the whole message (the
 * same ProtocolErrors, 08P01, 22023, 22021) without keeping its parameters or formats: what the
 * relay needs of a Bind to a statement whose decision holds (issue 18: nothing is allocated per
 * parameter). Output: the portal and statement names. Source: PostgreSQL 15 docs, 55.7 "Bind".
 */
export function decodeBindNames(payload: Buffer): { portal: string; statement: string } {
  const r = new BufferReader(payload, 'Bind');
  const portal = r.cstring('portal name');
  const statement = r.cstring('statement name');
  const formats = skipFormats(r, 'parameter');
  const n = r.uint16('parameter count');
  if (n * 4 > r.remaining) r.fail(`${n} parameters overrun the message`);
  for (let i = 0; i < n; i++) {
    const len = r.int32('parameter length');
    if (len < -1) r.fail(`invalid parameter length ${len}`);
    if (len > 0) r.skip(len, 'parameter value');
  }
  if (formats > 1 && formats !== n) {
    r.fail(`bind message has ${formats} parameter formats but ${n} parameters`);
  }
  skipFormats(r, 'result');
  r.end();
  return { portal, statement };
}

/** Reads the format codes {@link readFormats} reads, with its checks, keeping only their count. */
function skipFormats(r: BufferReader, kind: string): number {
  const n = r.uint16(`${kind} format count`);
  if (n * 2 > r.remaining) r.fail(`${n} ${kind} format codes overrun the message`);
  for (let i = 0; i < n; i++) {
    const f = r.int16(`${kind} format code`);
    if (f !== 0 && f !== 1) throw new ProtocolError(`unsupported format code: ${f}`, '22023');
  }
  return n;
}

/** Int16 count then that many Int16 format codes, each 0 (text) or 1 (binary). */
function readFormats(r: BufferReader, kind: string): number[] {
  const n = r.uint16(`${kind} format count`);
  if (n * 2 > r.remaining) r.fail(`${n} ${kind} format codes overrun the message`);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const f = r.int16(`${kind} format code`);
    // Postgres answers an unknown code with 22023 invalid_parameter_value, "unsupported format
    // code: N" (postgres.c exec_bind_message, printtup.c), at the parameter or column that uses it;
    // pgwarden refuses it at Bind even when nothing uses it (it must know every format it relays).
    if (f !== 0 && f !== 1) throw new ProtocolError(`unsupported format code: ${f}`, '22023');
    out.push(f);
  }
  return out;
}

/** Byte1 'S' (prepared statement) or 'P' (portal), then String name. */
function readTarget(r: BufferReader): { target: 'S' | 'P'; name: string } {
  const t = r.byte('target type');
  if (t !== 0x53 && t !== 0x50) r.fail(`invalid target type 0x${t.toString(16)}`);
  const name = r.cstring('name');
  r.end();
  return { target: t === 0x53 ? 'S' : 'P', name };
}

/**
 * Describe ('D'): Byte1 'S' or 'P', String name. Throws ProtocolError 08P01 on another target
 * byte, truncation or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "Describe".
 */
export function decodeDescribe(payload: Buffer): { target: 'S' | 'P'; name: string } {
  return readTarget(new BufferReader(payload, 'Describe'));
}

/**
 * Close ('C'): Byte1 'S' or 'P', String name. Throws ProtocolError 08P01 on another target byte,
 * truncation or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "Close".
 */
export function decodeClose(payload: Buffer): { target: 'S' | 'P'; name: string } {
  return readTarget(new BufferReader(payload, 'Close'));
}

/**
 * Execute ('E'): String portal, Int32 maximum rows (0 = no limit; Postgres treats negative values
 * as no limit too; returned signed as sent). Throws ProtocolError 08P01 on truncation or trailing
 * bytes; 22021 on invalid UTF-8. Source: PostgreSQL 15 docs, 55.7 "Execute".
 */
export function decodeExecute(payload: Buffer): { portal: string; maxRows: number } {
  const r = new BufferReader(payload, 'Execute');
  const portal = r.cstring('portal name');
  const maxRows = r.int32('row limit');
  r.end();
  return { portal, maxRows };
}

/**
 * SASLInitialResponse ('p'): String mechanism, Int32 length (-1: no initial response, returned as
 * an empty Buffer), then that many bytes (a subarray, no copy). Throws ProtocolError 08P01 on
 * truncation, a length below -1 or overrunning, or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "SASLInitialResponse".
 */
export function decodeSASLInitialResponse(payload: Buffer): { mechanism: string; data: Buffer } {
  const r = new BufferReader(payload, 'SASLInitialResponse');
  const mechanism = r.cstring('mechanism');
  const len = r.int32('initial response length');
  if (len < -1) r.fail(`invalid initial response length ${len}`);
  const data = len === -1 ? Buffer.alloc(0) : r.bytes(len, 'initial response');
  r.end();
  return { mechanism, data };
}

/**
 * SASLResponse ('p'): the whole payload is mechanism-specific data; returned as is (no copy).
 * Never throws. Source: PostgreSQL 15 docs, 55.7 "SASLResponse".
 */
export function decodeSASLResponse(payload: Buffer): Buffer {
  return payload;
}

/**
 * PasswordMessage ('p'): String password (cleartext or "md5…" hash). Throws ProtocolError 08P01
 * on a missing NUL or trailing bytes (Postgres: "invalid password packet size"); 22021 on invalid
 * UTF-8. Source: PostgreSQL 15 docs, 55.7 "PasswordMessage".
 */
export function decodePassword(payload: Buffer): string {
  const r = new BufferReader(payload, 'PasswordMessage');
  const pw = r.cstring('password');
  r.end();
  return pw;
}

/**
 * CopyFail ('f'): String error message reported by the client. Throws ProtocolError 08P01 on a
 * missing NUL or trailing bytes; 22021 on invalid UTF-8.
 * Source: PostgreSQL 15 docs, 55.7 "CopyFail".
 */
export function decodeCopyFail(payload: Buffer): string {
  const r = new BufferReader(payload, 'CopyFail');
  const msg = r.cstring('error message');
  r.end();
  return msg;
}

/**
 * Checks that a message defined as having no payload (Sync, Flush, Terminate, CopyDone) has
 * none. Throws ProtocolError 08P01 otherwise. Source: PostgreSQL 15 docs, 55.7.
 */
export function decodeEmpty(payload: Buffer, what: string): void {
  new BufferReader(payload, what).end();
}

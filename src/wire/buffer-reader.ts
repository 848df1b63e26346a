// Bounds-checked cursor over one message payload; every overrun becomes a ProtocolError 08P01.
import { isUtf8 } from 'node:buffer';
import { ProtocolError } from './protocol-error.js';

/** Strings up to this many bytes are checked for ASCII in a loop before the native UTF-8 check. */
const ASCII_SCAN_BYTES = 128;

/**
 * Sequential reader of a message payload (the bytes after the type byte and Int32 length).
 * Integers are big-endian (network order) as everywhere in the protocol. Strings are NUL-terminated
 * UTF-8 (the proxy insists on client_encoding=UTF8).
 * Every read that would pass the end of the payload throws ProtocolError 08P01; `str`/`cstring`
 * throw ProtocolError 22021 on invalid UTF-8, so the text the proxy analyzes is exactly the text
 * Postgres will see (no U+FFFD substitution).
 * Source: PostgreSQL 15 docs, 55.6 "Message Data Types".
 */
export class BufferReader {
  private pos = 0;

  /**
   * @param buf the payload to read; never copied, `bytes()` returns subarrays of it.
   * @param what message name used in error texts, e.g. `'Bind'`.
   */
  constructor(
    readonly buf: Buffer,
    readonly what: string,
  ) {}

  /** Bytes not yet read. */
  get remaining(): number {
    return this.buf.length - this.pos;
  }

  /** Current offset into the payload, in bytes. */
  get offset(): number {
    return this.pos;
  }

  /** Throws ProtocolError 08P01 naming this message. */
  fail(detail: string): never {
    throw new ProtocolError(`invalid ${this.what} message: ${detail}`);
  }

  private need(n: number, field: string): void {
    if (this.remaining < n) this.fail(`truncated ${field}`);
  }

  /** Byte1 as an unsigned number. Throws ProtocolError 08P01 when truncated. */
  byte(field = 'Byte1'): number {
    this.need(1, field);
    const v = this.buf[this.pos] as number;
    this.pos += 1;
    return v;
  }

  /** Int16, signed. Throws ProtocolError 08P01 when truncated. */
  int16(field = 'Int16'): number {
    this.need(2, field);
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  /** Int16 read as unsigned (counts: Postgres reads them with pq_getmsgint, unsigned). */
  uint16(field = 'Int16'): number {
    this.need(2, field);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  /** Int32, signed. Throws ProtocolError 08P01 when truncated. */
  int32(field = 'Int32'): number {
    this.need(4, field);
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Int32 read as unsigned (OIDs). Throws ProtocolError 08P01 when truncated. */
  uint32(field = 'Int32'): number {
    this.need(4, field);
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Byten: the next `n` bytes as a subarray (no copy). Throws ProtocolError 08P01 when truncated. */
  bytes(n: number, field = 'Byten'): Buffer {
    if (n < 0) this.fail(`negative length for ${field}`);
    this.need(n, field);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }

  /** Skips `n` bytes (a value not needed). Throws ProtocolError 08P01 when negative or truncated. */
  skip(n: number, field = 'Byten'): void {
    if (n < 0) this.fail(`negative length for ${field}`);
    this.need(n, field);
    this.pos += n;
  }

  /** All remaining bytes as a subarray (no copy). */
  rest(): Buffer {
    const v = this.buf.subarray(this.pos);
    this.pos = this.buf.length;
    return v;
  }

  /**
   * String: UTF-8 up to the next NUL, which is consumed.
   * Throws ProtocolError 08P01 when no NUL follows, 22021 on invalid UTF-8.
   */
  cstring(field = 'String'): string {
    const buf = this.buf;
    const start = this.pos;
    const end = buf.indexOf(0, start);
    if (end < 0) this.fail(`missing NUL terminator in ${field}`);
    // Names, tags and short texts are mostly ASCII: checked here byte by byte, read without a view
    // (issue 18: a subarray and a native UTF-8 check per field cost more than the loop).
    let ascii = end - start <= ASCII_SCAN_BYTES;
    for (let i = start; ascii && i < end; i++) if ((buf[i] as number) >= 0x80) ascii = false;
    const v = ascii ? buf.toString('latin1', start, end) : utf8(buf.subarray(start, end), this.what, field);
    this.pos = end + 1;
    return v;
  }

  /** Throws ProtocolError 08P01 unless every byte of the payload has been read. */
  end(): void {
    if (this.remaining !== 0) this.fail(`${this.remaining} unexpected trailing byte(s)`);
  }
}

/**
 * Decodes `bytes` as strict UTF-8 (no replacement characters).
 * Throws ProtocolError 22021 character_not_in_repertoire on an invalid sequence, with PostgreSQL's
 * message: `invalid byte sequence for encoding "UTF8": 0xc3 0x28` (the bytes of the first bad
 * character, as report_invalid_encoding in src/backend/utils/mb/mbutils.c prints them).
 * `what` and `field` are unused in the message (kept for callers naming the field).
 */
export function utf8(bytes: Buffer, _what: string, _field: string): string {
  if (!isUtf8(bytes)) {
    const at = firstInvalidUtf8(bytes);
    const shown = bytes.subarray(at, Math.min(bytes.length, at + utf8Length(bytes[at] as number)));
    const hex = [...shown].map((b) => `0x${b.toString(16).padStart(2, '0')}`).join(' ');
    throw new ProtocolError(`invalid byte sequence for encoding "UTF8": ${hex}`, '22021');
  }
  return bytes.toString('utf8');
}

/** The length UTF-8 gives a character from its first byte (pg_utf_mblen: 1 for a stray byte). */
function utf8Length(first: number): number {
  if ((first & 0xe0) === 0xc0) return 2;
  if ((first & 0xf0) === 0xe0) return 3;
  if ((first & 0xf8) === 0xf0) return 4;
  return 1;
}

/** Offset of the first byte that does not start a valid UTF-8 character (RFC 3629), or bytes.length. */
function firstInvalidUtf8(bytes: Buffer): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i] as number;
    const n = b < 0x80 ? 1 : utf8Length(b);
    if (b >= 0x80 && n === 1) return i;
    if (n > 1 && !isUtf8(bytes.subarray(i, i + n))) return i;
    i += n;
  }
  return bytes.length;
}

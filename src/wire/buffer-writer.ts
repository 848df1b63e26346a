// Growing buffer that builds one complete message, header included, for the encoders.
import { ProtocolError } from './protocol-error.js';

/** Largest value the Int32 length word can carry; longer messages cannot be expressed. */
const MAX_LENGTH = 0x7fffffff;

/**
 * Builds one message: Byte1 type (omitted when `code` is 0, the untyped startup-phase form),
 * Int32 length (counting itself and the payload, not the type byte), then the payload.
 * Integers are written big-endian. `finish()` fills in the length.
 * Source: PostgreSQL 15 docs, 55.6 "Message Data Types" and 55.7 "Message Formats".
 */
export class BufferWriter {
  private buf: Buffer;
  private pos: number;
  private readonly header: number;

  /**
   * @param code message type byte, or 0 for an untyped startup-phase message.
   * @param sizeHint expected payload size in bytes (only to size the first allocation).
   */
  constructor(
    private readonly code: number,
    sizeHint = 64,
  ) {
    this.header = code === 0 ? 4 : 5;
    this.buf = Buffer.allocUnsafe(this.header + Math.max(sizeHint, 0));
    this.pos = this.header;
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Byte1. */
  byte(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v & 0xff;
    return this;
  }

  /** Int16; accepts -32768..65535 (unsigned values are written as their bit pattern). */
  int16(v: number): this {
    this.ensure(2);
    this.buf.writeUInt16BE(v & 0xffff, this.pos);
    this.pos += 2;
    return this;
  }

  /**
   * Int16 element count. Throws ProtocolError 54000 above 65535: the count would silently wrap
   * and the receiver would misparse everything after it.
   */
  count16(n: number): this {
    if (n > 0xffff) throw new ProtocolError(`too many elements for an Int16 count: ${n}`, '54000');
    return this.int16(n);
  }

  /** Int32; accepts -2^31..2^32-1 (unsigned values such as OIDs are written as their bit pattern). */
  int32(v: number): this {
    this.ensure(4);
    this.buf.writeUInt32BE(v >>> 0, this.pos);
    this.pos += 4;
    return this;
  }

  /** Byten, copied in. */
  bytes(b: Uint8Array): this {
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  /**
   * String: UTF-8 then NUL. Throws ProtocolError 08P01 when `s` contains NUL, which the wire
   * format cannot carry (the receiver would cut the string there and misparse the rest).
   */
  cstring(s: string): this {
    if (s.includes('\0')) throw new ProtocolError('string contains a NUL byte and cannot be sent');
    const n = Buffer.byteLength(s, 'utf8');
    this.ensure(n + 1);
    this.buf.write(s, this.pos, n, 'utf8');
    this.pos += n;
    this.buf[this.pos++] = 0;
    return this;
  }

  /**
   * The finished message (header included), exactly sized.
   * Throws ProtocolError 54000 when the length does not fit the Int32 length word.
   */
  finish(): Buffer {
    const length = this.pos - (this.header - 4);
    if (length > MAX_LENGTH) throw new ProtocolError('message too long to encode', '54000');
    if (this.header === 5) this.buf[0] = this.code;
    this.buf.writeInt32BE(length, this.header - 4);
    return this.buf.subarray(0, this.pos);
  }
}

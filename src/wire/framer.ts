// Splits a byte stream into whole protocol messages without parsing their contents.
import { StartupCode } from './codes.js';
import { ProtocolError } from './protocol-error.js';

/**
 * One complete message as cut from the stream.
 * Source: PostgreSQL 15 docs, 55.7 "Message Formats" (every message is Byte1 type, Int32 length
 * counting itself, payload; the startup-phase messages have no type byte).
 */
export interface Frame {
  /** Type byte; 0 for an untyped startup-phase message (StartupMessage, SSLRequest, …). */
  readonly code: number;
  /** The whole message, header included, forwardable as is. */
  readonly bytes: Buffer;
  /** The bytes after the header (after the Int32 length). A subarray of `bytes`. */
  readonly payload: Buffer;
}

/**
 * A Frame whose payload view is made only when asked for: on a large result most messages are
 * forwarded as `bytes` and their payload is never read (one allocation per message saved).
 */
class CutFrame implements Frame {
  private view: Buffer | undefined;
  constructor(
    readonly code: number,
    readonly bytes: Buffer,
    private readonly headerLen: number,
  ) {}

  get payload(): Buffer {
    this.view ??= this.bytes.subarray(this.headerLen);
    return this.view;
  }
}

/** Options of a MessageFramer (sizes in bytes). Source: PostgreSQL 15 docs, 55.7 "Message Formats". */
export interface MessageFramerOptions {
  /** Largest accepted message, in bytes, header included. Larger ones throw ProtocolError 54000. */
  readonly maxMessageBytes: number;
  /** True on the client-facing side before the StartupMessage: the first message is untyped. */
  readonly startup: boolean;
  /**
   * Largest accepted startup-phase message, in bytes, header included; default 10000, Postgres'
   * MAX_STARTUP_PACKET_LENGTH. Larger ones throw ProtocolError 08P01 (as Postgres does).
   */
  readonly maxStartupBytes?: number;
}

/** Postgres' MAX_STARTUP_PACKET_LENGTH (src/include/libpq/pqcomm.h). */
const MAX_STARTUP_PACKET_LENGTH = 10000;

/**
 * Incremental framer for one direction of a connection.
 *
 * `push(chunk)` returns every message completed by the bytes so far and keeps the remainder.
 * Chunks are kept in a list; a frame lying within one chunk is a subarray of it (no copy), a frame
 * spanning chunks is copied exactly once. The length word is checked as soon as the header has
 * arrived, so an oversize message is refused before its body is buffered.
 *
 * Startup mode: the next message is untyped (Int32 length, then payload; length >= 8 and
 * <= maxStartupBytes). After an untyped frame the framer switches to typed mode, EXCEPT after an
 * SSLRequest or GSSENCRequest: the protocol says the client's next message is again an untyped
 * startup packet, so the framer stays in startup mode, and `push` returns right after that frame
 * without framing anything buffered behind it. Bytes that arrived after an SSLRequest before the
 * server answered are an injection attempt (CVE-2021-23214): the caller must check `buffered === 0`
 * before starting TLS and refuse otherwise.
 *
 * After a throw the framer is poisoned: further `push` calls rethrow the same error (the
 * connection must be closed; frames complete before the bad one in the same chunk are dropped).
 *
 * Source: PostgreSQL 15 docs, 55.2.1 "Start-up", 55.2.11 "SSL Session Encryption", 55.7.
 */
export class MessageFramer {
  private readonly maxMessageBytes: number;
  private readonly maxStartupBytes: number;
  private startup: boolean;
  private chunks: Buffer[] = [];
  /** Index in `chunks` of the first chunk still holding unread bytes. */
  private head = 0;
  /** Offset of the first unread byte within `chunks[head]`. */
  private headOffset = 0;
  private total = 0;
  private failed: ProtocolError | undefined;
  /** Bytes still to drop of a message given up by {@link skipPending}. */
  private skipping = 0;
  private cut = 0;
  /** The message assembled in place ({@link assemblePending}): its buffer, type byte, bytes so far. */
  private assembly: { readonly buf: Buffer; readonly code: number; filled: number } | undefined;
  /** Bytes still to arrive of the message {@link takeRun} began to pass on (a row split across chunks). */
  private passing = 0;
  /** Bytes at the head of the buffered chunks that are the rest of that message, not yet taken. */
  private passHead = 0;
  /** The assembled message completed by the last {@link feed}, not yet shifted. */
  private assembled: Frame | undefined;

  /**
   * @param opts maximum sizes in bytes and whether the stream starts with an untyped message.
   */
  constructor(opts: MessageFramerOptions) {
    this.maxMessageBytes = opts.maxMessageBytes;
    this.maxStartupBytes = Math.min(opts.maxStartupBytes ?? MAX_STARTUP_PACKET_LENGTH, opts.maxMessageBytes);
    this.startup = opts.startup;
  }

  /** Bytes received but not yet returned as part of a frame. */
  get buffered(): number {
    return this.total + (this.assembly?.filled ?? 0) + (this.assembled?.bytes.length ?? 0);
  }

  /** Messages cut so far: with {@link pendingMessageBytes}, names the message now arriving. */
  get cutCount(): number {
    return this.cut;
  }

  /**
   * The whole size (bytes, header included) of the typed message whose header has arrived and
   * whose body has not all arrived yet; 0 when there is none (between messages, before a whole
   * header, in startup mode). O(1): the header is read from the first chunks only.
   */
  get pendingMessageBytes(): number {
    if (this.assembly) return this.assembly.buf.length;
    if (this.startup || this.total < 5 || this.passing > 0 || this.passHead > 0) return 0;
    const size = ((this.peek(1) << 24) | (this.peek(2) << 16) | (this.peek(3) << 8) | this.peek(4)) + 1;
    return size > this.total ? size : 0;
  }

  /**
   * Gives up the message now arriving (see {@link pendingMessageBytes}): the bytes buffered of it are
   * dropped now and the rest as they arrive; framing goes on after it. Output: its type byte (0 when
   * there is no such message). Used to refuse a message that cannot be held (53200, issue 16).
   */
  skipPending(): number {
    const size = this.pendingMessageBytes;
    if (size === 0) return 0;
    const code = this.assembly ? this.assembly.code : this.peek(0);
    this.skipping = size - this.buffered;
    this.assembly = undefined;
    this.chunks = [];
    this.head = 0;
    this.headOffset = 0;
    this.total = 0;
    this.cut++;
    return code;
  }

  /**
   * Assembles the message now arriving (see {@link pendingMessageBytes}) in one buffer of its whole
   * size, allocated now: the bytes buffered of it are copied in, and every later chunk is copied in
   * as it arrives and dropped, so the message is in memory once, not once in chunks and again when
   * cut (issue 16 item 2: the memory budget has been taken for it; the caller calls this once it
   * has). Harmless when there is no such message or it is already being assembled.
   */
  assemblePending(): void {
    const size = this.pendingMessageBytes;
    if (size === 0 || this.assembly) return;
    const code = this.peek(0);
    const buf = Buffer.allocUnsafe(size);
    let filled = 0;
    for (let i = this.head; i < this.chunks.length; i++) {
      const c = this.chunks[i] as Buffer;
      const from = i === this.head ? this.headOffset : 0;
      c.copy(buf, filled, from);
      filled += c.length - from;
    }
    this.chunks = [];
    this.head = 0;
    this.headOffset = 0;
    this.total = 0;
    this.assembly = { buf, code, filled };
  }

  /** True while the next message is expected to be untyped. */
  get inStartup(): boolean {
    return this.startup;
  }

  /**
   * Makes the next message untyped again, e.g. after answering SSLRequest with 'N' (the client
   * then sends a new StartupMessage). Harmless when already in startup mode.
   */
  expectStartup(): void {
    this.startup = true;
  }

  /**
   * Appends `chunk` and returns every message now complete, in stream order.
   * Throws ProtocolError 08P01 on a length word < 4 (typed) or < 8 (startup), a startup packet
   * over maxStartupBytes, or a typed message whose type byte is 0; ProtocolError 54000 on a typed message over maxMessageBytes (whole
   * message, header included).
   */
  push(chunk: Buffer): Frame[] {
    this.feed(chunk);
    const frames: Frame[] = [];
    for (;;) {
      const frame = this.shift();
      if (!frame) break;
      frames.push(frame);
      if (frame.code === 0) {
        if (isNegotiationRequest(frame.payload)) break;
        this.startup = false;
      }
    }
    return frames;
  }

  /**
   * Appends `chunk` without cutting anything: the messages it completes are taken one at a time
   * with {@link shift} or a run at a time with {@link takeRun} (the relay's upstream side, which
   * decides per message whether a run of rows can pass as is). Typed mode only: `push` handles the
   * switch out of startup mode. Throws the poisoning ProtocolError of an earlier failure.
   */
  feed(chunk: Buffer): void {
    if (this.failed) throw this.failed;
    if (this.skipping > 0) {
      const n = Math.min(this.skipping, chunk.length);
      this.skipping -= n;
      chunk = chunk.subarray(n);
    }
    if (this.passing > 0) {
      const n = Math.min(this.passing, chunk.length);
      this.passing -= n;
      this.passHead += n;
    }
    const a = this.assembly;
    if (a) {
      const n = Math.min(a.buf.length - a.filled, chunk.length);
      chunk.copy(a.buf, a.filled, 0, n);
      a.filled += n;
      chunk = chunk.subarray(n);
      if (a.filled === a.buf.length) {
        this.assembly = undefined;
        this.cut++;
        this.assembled = new CutFrame(a.code, a.buf, 5);
      }
    }
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.total += chunk.length;
    }
  }

  /**
   * The next complete message fed so far, or undefined when more bytes are needed. Throws (and
   * poisons the framer with) the ProtocolError {@link push} documents.
   */
  shift(): Frame | undefined {
    if (this.failed) throw this.failed;
    if (this.passHead > 0)
      throw new Error('MessageFramer: the rest of a message passed on is taken with takeRun');
    const done = this.assembled;
    if (done) {
      this.assembled = undefined;
      return done;
    }
    try {
      return this.next();
    } catch (err) {
      if (err instanceof ProtocolError) this.failed = err;
      this.chunks = [];
      this.head = 0;
      this.headOffset = 0;
      this.total = 0;
      throw err;
    }
  }

  /**
   * Takes the run of typed messages of type `code` at the head of what was fed, as far as they lie
   * in one received chunk: one view of all their bytes, no Frame and no allocation per message
   * (issue 18: a result's DataRows pass through as byte ranges, one write per chunk as a pipe
   * makes). A last message of the run that continues in the next chunk is passed on too, from its
   * whole header on, when it is smaller than `splitBelow` bytes (a larger one is left to be held
   * and assembled: the memory budget counts it): while {@link continuing}, the next call returns
   * the rest of it as it arrives, whatever `code`, and nothing else. Undefined when the next message is not a `code` message
   * with its header in the head chunk (then {@link shift} cuts it, and refuses it when it is
   * malformed). Stops before a message whose length word is invalid or over the limit, so every
   * message of a run passed the checks {@link shift} makes.
   */
  takeRun(code: number, splitBelow = 0): Buffer | undefined {
    if (this.passHead > 0) {
      const c = this.chunks[this.head] as Buffer;
      const start = this.headOffset;
      const at = start + this.passHead;
      this.total -= this.passHead;
      this.passHead = 0;
      this.headOffset = at;
      if (at === c.length) this.dropHead();
      return c.subarray(start, at);
    }
    if (code === 0 || this.startup || this.assembled || this.total < 5) return undefined;
    const c = this.chunks[this.head] as Buffer;
    const start = this.headOffset;
    const max = this.maxMessageBytes;
    let at = start;
    let n = 0;
    while (c.length - at >= 5 && c[at] === code) {
      const size = c.readInt32BE(at + 1) + 1;
      if (size < 5 || size > max) break;
      if (c.length - at < size) {
        if (size >= splitBelow) break;
        n++;
        // Its header is here and valid: the rest goes on as it arrives, never buffered.
        this.passing = size - (c.length - at);
        at = c.length;
        break;
      }
      n++;
      at += size;
    }
    if (n === 0) return undefined;
    this.cut += n;
    this.total -= at - start;
    this.headOffset = at;
    if (at === c.length) this.dropHead();
    return c.subarray(start, at);
  }

  /** True while the rest of a message {@link takeRun} began to pass on is still to be taken or to arrive. */
  get continuing(): boolean {
    return this.passing > 0 || this.passHead > 0;
  }

  /** The head chunk is all read: moves on to the next, dropping read chunks in bulk. */
  private dropHead(): void {
    this.head++;
    this.headOffset = 0;
    this.compact();
  }

  /** Drops consumed chunk references in bulk, so the list neither grows nor shifts per message. */
  private compact(): void {
    if (this.head === this.chunks.length) {
      this.chunks = [];
      this.head = 0;
    } else if (this.head > 64 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** Cuts the next complete frame, or returns undefined when more bytes are needed. */
  private next(): Frame | undefined {
    const headerLen = this.startup ? 4 : 5;
    if (this.total < headerLen) return undefined;
    const code = this.startup ? 0 : this.peek(0);
    const o = this.startup ? 0 : 1;
    // The length word is signed on the wire; a value with the top bit set is negative.
    const length =
      (this.peek(o) << 24) | (this.peek(o + 1) << 16) | (this.peek(o + 2) << 8) | this.peek(o + 3) | 0;
    if (this.startup) {
      if (length < 8) throw new ProtocolError(`invalid length of startup packet: ${length}`);
      if (length > this.maxStartupBytes) {
        throw new ProtocolError(`invalid length of startup packet: ${length}`);
      }
    } else {
      // No message type is 0; rejecting it keeps `code === 0` meaning "untyped startup packet".
      if (code === 0) throw new ProtocolError('invalid message type 0x00');
      if (length < 4) {
        throw new ProtocolError(`invalid message length ${length} for message type 0x${hex(code)}`);
      }
      if (length + 1 > this.maxMessageBytes) {
        throw new ProtocolError(
          `message of type 0x${hex(code)} is ${length + 1} bytes, over the limit of ${this.maxMessageBytes}`,
          '54000',
        );
      }
    }
    const size = length + (this.startup ? 0 : 1);
    if (this.total < size) return undefined;
    const bytes = this.take(size);
    this.cut++;
    return new CutFrame(code, bytes, headerLen);
  }

  /** The unread byte at offset `i` (i < total), walking at most a few chunks. */
  private peek(i: number): number {
    let idx = this.head;
    let off = this.headOffset + i;
    for (;;) {
      const c = this.chunks[idx] as Buffer;
      if (off < c.length) return c[off] as number;
      off -= c.length;
      idx++;
    }
  }

  /** Removes and returns the next `size` bytes (size <= total); copies only when spanning chunks. */
  private take(size: number): Buffer {
    const first = this.chunks[this.head] as Buffer;
    let out: Buffer;
    if (first.length - this.headOffset >= size) {
      out = first.subarray(this.headOffset, this.headOffset + size);
      this.headOffset += size;
    } else {
      out = Buffer.allocUnsafe(size);
      let filled = 0;
      while (filled < size) {
        const c = this.chunks[this.head] as Buffer;
        const n = Math.min(c.length - this.headOffset, size - filled);
        c.copy(out, filled, this.headOffset, this.headOffset + n);
        filled += n;
        this.headOffset += n;
        if (this.headOffset === c.length) {
          this.head++;
          this.headOffset = 0;
        }
      }
    }
    const cur = this.chunks[this.head];
    if (cur && this.headOffset === cur.length) {
      this.head++;
      this.headOffset = 0;
    }
    this.total -= size;
    this.compact();
    return out;
  }
}

/** True when an untyped payload is an SSLRequest or GSSENCRequest (8-byte packet, fixed code). */
function isNegotiationRequest(payload: Buffer): boolean {
  if (payload.length !== 4) return false;
  const code = payload.readInt32BE(0);
  return code === StartupCode.SSLRequest || code === StartupCode.GSSENCRequest;
}

function hex(code: number): string {
  return code.toString(16).padStart(2, '0');
}

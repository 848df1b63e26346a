// The relay's writes upstream: forwarded messages coalesced into one write, texts sent around kept bytes.
import { type RewrittenSql, sentUtf8 } from '../rewrite/rewrite-sql.js';
import { EXTENDED_QUERY_MESSAGES, FrontendCode } from '../wire/codes.js';
import type { RelayOptions } from './relay-options.js';

/**
 * The root of the relay's flows: every message pgwarden sends upstream goes through `send` (or
 * `sendWithText`), which tracks whether an implicit extended-protocol transaction is open there
 * and, while `coalescing`, joins messages forwarded as they came into one write. RelayCore builds on it.
 */
export abstract class UpstreamWriteRelay {
  /** An extended-protocol message came since the last Sync: an implicit transaction may be open upstream. */
  protected extendedOpen = false;

  constructor(protected readonly o: RelayOptions) {}

  /**
   * While set (the synchronous part of handling one client chunk), what is sent upstream and lies
   * right after the previous message in the same chunk is only appended to `run`: messages
   * forwarded as they came leave as one view of the client's bytes, one write (issue 18).
   */
  protected coalescing = false;
  /**
   * Set with `coalescing` where nothing corks the socket for the batch (the steady path): when a
   * second write is needed in the batch (a rewritten text between forwarded bytes), the socket is
   * corked then, and {@link uncorkRuns} lets the batch go as one write.
   */
  protected corkRuns = false;
  private corked = false;
  private run: Buffer | undefined;
  private runEnd = 0;

  protected send(bytes: Buffer): void {
    this.sendRange(bytes, 0, bytes.length);
  }

  /**
   * Sends the message `bytes[start, end)` (a whole message: a Frame's bytes, or one lying in a
   * received chunk), as {@link send} does: while coalescing, a range right after the previous one
   * in the same memory only extends the write; a chunk sent whole from offset 0 is written itself,
   * without a view.
   */
  protected sendRange(bytes: Buffer, start: number, end: number): void {
    // What went up decides whether an implicit extended-protocol transaction is open there.
    const code = bytes[start] as number;
    if (code === FrontendCode.Sync) this.extendedOpen = false;
    else if (EXTENDED_QUERY_MESSAGES.has(code)) this.extendedOpen = true;
    const from = bytes.byteOffset + start;
    const run = this.run;
    if (run && bytes.buffer === run.buffer && from === this.runEnd) {
      this.runEnd += end - start;
      return;
    }
    this.flushSent(true);
    if (!this.coalescing) {
      this.o.upstream.socket.write(start === 0 && end === bytes.length ? bytes : bytes.subarray(start, end));
      return;
    }
    this.run = start === 0 ? bytes : bytes.subarray(start);
    this.runEnd = from + (end - start);
  }

  /**
   * Sends a message that carries a rewritten text (mask at read): `encoded` is the message made
   * with the text, or, for a text whose UTF-8 bytes the rewrite kept (rewrite-sql.ts sentUtf8),
   * the message made with an empty text, which is sent around those bytes: a huge text is not
   * copied once more into the message (issue 16 item 2). Output: nothing; the message went up.
   */
  protected sendWithText(sent: RewrittenSql, encode: (text: string) => Buffer): void {
    const body = sentUtf8(sent);
    if (!body) {
      this.send(encode(sent.text));
      return;
    }
    const empty = encode('');
    // Where the (empty) text's NUL is: after the code and the length, and for a Parse its name's NUL.
    const at = empty[0] === FrontendCode.Parse ? empty.indexOf(0, 5) + 1 : 5;
    const head = Buffer.from(empty.subarray(0, at));
    head.writeInt32BE(empty.length - 1 + body.length, 1);
    this.send(head);
    this.flushSent(true);
    const up = this.o.upstream.socket;
    up.write(body);
    up.write(empty.subarray(at));
  }

  /**
   * Writes what {@link send} holds back; call before `coalescing` is cleared or the socket is used
   * directly. `more`: other writes follow in the same batch (then, under `corkRuns`, the socket is
   * corked first).
   */
  protected flushSent(more = false): void {
    const run = this.run;
    if (!run) return;
    this.run = undefined;
    if (more && this.corkRuns && !this.corked) {
      this.corked = true;
      this.o.upstream.socket.cork();
    }
    const length = this.runEnd - run.byteOffset;
    this.o.upstream.socket.write(
      length === run.length ? run : Buffer.from(run.buffer, run.byteOffset, length),
    );
  }

  /** Ends a batch sent under `corkRuns`: what was written since the socket was corked leaves as one write. */
  protected uncorkRuns(): void {
    this.corkRuns = false;
    if (!this.corked) return;
    this.corked = false;
    this.o.upstream.socket.uncork();
  }
}

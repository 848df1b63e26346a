// A bare protocol-level client for tests that need exact control of the bytes sent to pgwarden.
import net from 'node:net';
import { ScramClientExchange } from '../../src/auth/scram-client.js';
import { decodeAuthentication, decodeReadyForQuery } from '../../src/wire/backend.js';
import { BackendCode } from '../../src/wire/codes.js';
import { decodeErrorResponse, type ErrorFields } from '../../src/wire/error-fields.js';
import { type Frame, MessageFramer } from '../../src/wire/framer.js';
import {
  passwordMessage,
  saslInitialResponse,
  saslResponse,
  startupMessage,
} from '../../src/wire/frontend-encode.js';

/** A connected socket with a framer over what the server sends. */
export class RawClient {
  private readonly framer = new MessageFramer({ maxMessageBytes: 1 << 30, startup: false });
  private readonly frames: Frame[] = [];
  private readonly rawBytes: Buffer[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  /** Bytes to take off the stream before framing: the one-byte answer to SSLRequest/GSSENCRequest. */
  private unframed = 0;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (c: Buffer) => {
      this.rawBytes.push(c);
      const skip = Math.min(this.unframed, c.length);
      this.unframed -= skip;
      for (const f of this.framer.push(c.subarray(skip))) this.frames.push(f);
      this.wake();
    });
    socket.on('close', () => {
      this.closed = true;
      this.wake();
    });
    socket.on('error', () => {});
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Opens a TCP connection to 127.0.0.1:port. */
  static connect(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(new RawClient(s)));
      s.once('error', reject);
    });
  }

  /** Every byte received so far, concatenated (for single-byte answers such as 'N'). */
  received(): Buffer {
    return Buffer.concat(this.rawBytes);
  }

  /** Waits until `pred` holds or the socket closes, at most `ms` (default 30 s: a bound on an answer that must come, generous for a loaded machine). */
  async until(pred: () => boolean, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred() && !this.closed) {
      if (Date.now() > deadline) throw new Error('timeout waiting for the server');
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** The next frame (waits for it); throws when the socket closes first. */
  async next(ms = 5000): Promise<Frame> {
    await this.until(() => this.frames.length > 0, ms);
    const f = this.frames.shift();
    if (!f) throw new Error('connection closed');
    return f;
  }

  /** Frames up to and including the next ReadyForQuery (or ErrorResponse FATAL / close). */
  async untilReady(ms = 5000): Promise<Frame[]> {
    const out: Frame[] = [];
    for (;;) {
      const f = await this.next(ms);
      out.push(f);
      if (f.code === BackendCode.ReadyForQuery) return out;
    }
  }

  /** Sends an SSLRequest or GSSENCRequest whose one-byte answer is not a framed message. */
  negotiate(request: Buffer): void {
    this.unframed++;
    this.write(request);
  }

  write(b: Buffer | string): void {
    this.socket.write(b);
  }

  end(): void {
    this.socket.destroy();
  }

  /**
   * Sends a StartupMessage and completes SCRAM-SHA-256 (or cleartext) with `password`; resolves at the first
   * ReadyForQuery, or rejects with the ErrorResponse fields.
   */
  async login(params: Record<string, string>, password: string): Promise<Frame[]> {
    this.write(startupMessage(new Map(Object.entries(params))));
    let scram: ScramClientExchange | undefined;
    for (;;) {
      const f = await this.next();
      if (f.code === BackendCode.ErrorResponse) throw decodeErrorResponse(f.payload);
      if (f.code !== BackendCode.Authentication) continue;
      const a = decodeAuthentication(f.payload);
      if (a.type === 'sasl') {
        scram = new ScramClientExchange(password);
        this.write(saslInitialResponse('SCRAM-SHA-256', scram.clientFirst()));
      } else if (a.type === 'sasl-continue' && scram) this.write(saslResponse(scram.clientFinal(a.data)));
      else if (a.type === 'sasl-final' && scram) scram.verifyServerFinal(a.data);
      // A PostgreSQL with `password` authentication (the embedded test server, reached directly).
      else if (a.type === 'cleartext') this.write(passwordMessage(password));
      else if (a.type === 'ok') return this.untilReady();
    }
  }
}

/** Decodes an ErrorResponse frame, or throws when it is another message. */
export function errorOf(f: Frame): ErrorFields {
  if (f.code !== BackendCode.ErrorResponse)
    throw new Error(`expected ErrorResponse, got ${String.fromCharCode(f.code)}`);
  return decodeErrorResponse(f.payload);
}

/** The transaction status of a ReadyForQuery frame. */
export function statusOf(f: Frame): string {
  return decodeReadyForQuery(f.payload);
}

// Awaitable queue of frames from a socket, used during the start-up and authentication exchanges.
import type { Socket } from 'node:net';
import type { Frame, MessageFramer } from '../wire/framer.js';

/**
 * Reads whole frames from `socket` through `framer` one at a time with `await next()`.
 * `next()` rejects with the framer's ProtocolError (08P01/54000), with an Error when the socket
 * closes, or on `timeoutMs` without a message (PostgreSQL's authentication_timeout, 60 s).
 * `detach()` removes its listeners so the socket can be handed to the relay.
 */
export class FrameQueue {
  private readonly frames: Frame[] = [];
  private waiter: { resolve: (f: Frame) => void; reject: (e: Error) => void } | undefined;
  private failure: Error | undefined;
  private readonly onData = (chunk: Buffer) => {
    try {
      for (const f of this.framer.push(chunk)) this.frames.push(f);
    } catch (e) {
      this.failure = e as Error;
    }
    this.wake();
  };
  private readonly onClose = () => {
    this.failure ??= new Error('client closed the connection');
    this.wake();
  };

  constructor(
    private readonly socket: Socket,
    private framer: MessageFramer,
  ) {
    socket.on('data', this.onData);
    socket.on('close', this.onClose);
    socket.on('error', this.onClose);
  }

  /** Replaces the framer (after a TLS upgrade the stream starts over on a new socket). */
  get currentFramer(): MessageFramer {
    return this.framer;
  }

  /** Frames received and not yet taken. */
  get queued(): number {
    return this.frames.length;
  }

  /** The next frame, in order. */
  next(timeoutMs: number): Promise<Frame> {
    const ready = this.frames.shift();
    if (ready) return Promise.resolve(ready);
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        reject(new Error('timeout waiting for the client'));
      }, timeoutMs);
      this.waiter = {
        resolve: (f) => {
          clearTimeout(timer);
          resolve(f);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    const f = this.frames.shift();
    if (f) {
      this.waiter = undefined;
      w.resolve(f);
    } else if (this.failure) {
      this.waiter = undefined;
      w.reject(this.failure);
    }
  }

  /** Stops listening; frames still queued are returned. */
  detach(): Frame[] {
    this.socket.off('data', this.onData);
    this.socket.off('close', this.onClose);
    this.socket.off('error', this.onClose);
    return this.frames.splice(0);
  }
}

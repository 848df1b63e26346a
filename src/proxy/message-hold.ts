// One direction of one connection as the memory budget sees it: the large message arriving and those cut and not yet written on.
import {
  DEFAULT_MEMORY_WAIT_MS,
  type Grant,
  HELD_COPIES,
  heldCost,
  LARGE_MESSAGE_BYTES,
  type MemoryBudget,
} from './memory-budget.js';

/** What {@link MessageHold.arrive} found: go on, or a message that can never fit (refuse it, 53200). */
export type HoldVerdict = 'ok' | 'too-large';

/** The framer a {@link MessageHold} reads (MessageFramer): the message now arriving, and assembling it in place. */
export interface HeldFramer {
  readonly pendingMessageBytes: number;
  readonly cutCount: number;
  /** Bytes received and not yet cut (MessageFramer.buffered): how much of the arriving message is here. */
  readonly buffered: number;
  /** Assembles the message now arriving in one buffer from now on (MessageFramer.assemblePending). */
  assemblePending?(): void;
}

/** Options of a {@link MessageHold}. */
export interface MessageHoldOptions {
  /** Longest wait for budget (ms), default the budget's `waitMs`. */
  readonly waitMs?: number;
  /**
   * Called when a wait ran out: the take has been withdrawn and nothing of the message is counted;
   * the caller gives the message up (the socket stays paused until it resumes it). Input: the
   * message's size in bytes and the wait in ms. Without it the wait does not end.
   */
  readonly onWaitTimeout?: (size: number, waitedMs: number) => void;
  /** How many times over a large message is held (memory-budget.ts heldCost), read as each arrives; default HELD_COPIES. */
  readonly copies?: () => number;
  /**
   * Whether the peer is at fault while this hold's messages wait in pgwarden itself (cut, not yet
   * written, or written without filling the socket): for the client's hold, whether the client
   * leaves unread what pgwarden wrote to it. When it says no, waiting in pgwarden's own queue
   * (the gate analyzing earlier messages, another session's 60 MB statement) is not a stall.
   * Absent: such a wait counts as a stall, as any other.
   */
  readonly peerAtFault?: () => boolean;
}

/**
 * The budget one direction of one connection holds (issue 16 item 2): the bytes of the large
 * message now arriving on `socket` (taken when its header has arrived; `socket` is paused until
 * they are granted) and of the large messages cut from it that have not been written on yet. All
 * of it is given back by {@link close}. O(1) per chunk: one header read, no scan.
 */
export class MessageHold {
  private arriving = 0;
  /** MessageFramer.cutCount when the arriving message's bytes were taken (-1: none). */
  private arrivingId = -1;
  private inFlight = 0;
  private waiter: Grant | undefined;
  private waitTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** When this hold last kept its pace (ms since the epoch): see {@link moveBy}. */
  private moved = Date.now();
  /** Bytes of held messages that arrived or were handed on since {@link moved}. */
  private movedBytes = 0;
  /** framer.buffered when the arriving message was last looked at. */
  private arrivedBytes = 0;
  /** Sockets held messages were written to and not yet drained, with the bytes they had handed on then. */
  private readonly outs = new Map<Writable, number>();
  private readonly unregister: (() => void) | undefined;

  /**
   * Input: the budget (none: nothing is counted), the socket the messages are read from, and how
   * to end the session when the budget evicts it as stalled (absent: never evicted).
   */
  constructor(
    private readonly budget: MemoryBudget | undefined,
    private readonly socket: { pause(): unknown; resume(): unknown },
    evict?: () => void,
    private readonly opts: MessageHoldOptions = {},
  ) {
    this.unregister =
      budget && evict
        ? budget.register({
            held: () => (this.waiter ? 0 : this.arriving) + this.inFlight,
            progressAt: (now) => this.progressAt(now),
            evict,
          })
        : undefined;
  }

  /** True when no large message is arriving or waiting for budget (a chunk of small whole messages then changes nothing here). */
  get idle(): boolean {
    return this.arrivingId < 0 && this.waiter === undefined;
  }

  /** The budget's clock (event-loop-blocked time left out), or the wall clock without a budget. */
  private now(): number {
    return this.budget ? this.budget.now() : Date.now();
  }

  private stopWait(): void {
    if (this.waiter) this.budget?.cancel(this.waiter);
    this.waiter = undefined;
    if (this.waitTimer) clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
  }

  /** The last time this hold kept its pace, counting what was handed on of held messages since the last look. */
  private progressAt(now: number): number {
    for (const [out, before] of this.outs) {
      const handed = handedOn(out);
      if (handed > before) {
        this.outs.set(out, handed);
        this.moveBy(handed - before, now);
      }
    }
    // Held messages that only wait for pgwarden itself (nothing arriving, nothing waiting for a
    // socket to drain) while the peer reads what it is sent: pgwarden is slow, not the client.
    // Ending such a session evicted clients that had sent their statement whole (the 24 × 60 MB
    // burst: 7 of 24 ended while the gate analyzed the others' statements one at a time).
    const peerAtFault = this.opts.peerAtFault;
    if (peerAtFault && this.inFlight > 0 && this.arrivingId < 0 && this.outs.size === 0 && !peerAtFault())
      this.movedNow(now);
    return this.moved;
  }

  /** A held message completed or was written on: this hold moved now. */
  private movedNow(now = this.now()): void {
    this.moved = now;
    this.movedBytes = 0;
  }

  /**
   * `bytes` of held messages arrived or were handed on: this hold has moved once they add up to its
   * pace since it last moved — the bytes per stall window that would finish the messages it holds
   * (their size: held cost / HELD_COPIES) within the wait a waiter is given (`waitMs`). A trickle
   * below it is no progress: the budget may end the session while others wait.
   */
  private moveBy(bytes: number, now: number): void {
    this.movedBytes += bytes;
    const budget = this.budget;
    const held = ((this.waiter ? 0 : this.arriving) + this.inFlight) / HELD_COPIES;
    const waitMs = this.opts.waitMs ?? budget?.waitMs ?? DEFAULT_MEMORY_WAIT_MS;
    const pace = budget ? Math.ceil((held * budget.stallMs) / waitMs) : 0;
    if (this.movedBytes >= pace) this.movedNow(now);
  }

  /**
   * After a chunk was framed, before {@link arrive}: the bytes taken for the message that the chunk
   * completed (the first frame the push returned), now in flight; 0 when none. The caller gives
   * them back with {@link released} once the message has been written on or dropped.
   */
  completed(framer: { readonly cutCount: number }): number {
    if (this.arrivingId < 0 || framer.cutCount <= this.arrivingId) return 0;
    this.movedNow();
    if (this.waiter) {
      // All of it arrived before the pause took effect: the bytes are here, nothing left to wait for.
      this.stopWait();
      this.arriving = 0;
      this.arrivingId = -1;
      this.socket.resume();
      return 0;
    }
    const bytes = this.arriving;
    this.arriving = 0;
    this.arrivingId = -1;
    this.inFlight += bytes;
    return bytes;
  }

  /**
   * After a chunk was framed: takes budget for the large message now arriving, if any, pausing
   * the socket until granted (and again while still waiting, when someone else resumed it).
   * Output: 'too-large' for a message whose held cost ({@link heldCost}) exceeds the whole budget
   * (the caller skips it and refuses it), else 'ok'. Once granted, the framer assembles the message
   * in place (one copy of it in memory while it arrives). A wait longer than `waitMs` is withdrawn
   * and reported to `onWaitTimeout` (the caller refuses the message, 53200).
   */
  arrive(framer: HeldFramer): HoldVerdict {
    // A chunk of the arriving message came: the client is sending it, at the pace its bytes show.
    if (this.arrivingId >= 0) {
      this.moveBy(Math.max(0, framer.buffered - this.arrivedBytes), this.now());
      this.arrivedBytes = framer.buffered;
    }
    if (this.waiter) {
      this.socket.pause();
      return 'ok';
    }
    if (!this.budget || this.closed || this.arrivingId >= 0) return 'ok';
    const size = framer.pendingMessageBytes;
    if (size < LARGE_MESSAGE_BYTES) return 'ok';
    const cost = heldCost(size, this.opts.copies?.());
    if (this.budget.tooLarge(cost)) return 'too-large';
    this.arriving = cost;
    this.arrivingId = framer.cutCount;
    this.arrivedBytes = framer.buffered;
    this.movedNow();
    const grant: Grant = () => {
      this.waiter = undefined;
      if (this.waitTimer) clearTimeout(this.waitTimer);
      this.waitTimer = undefined;
      if (this.closed) {
        this.budget?.release(cost);
        return;
      }
      framer.assemblePending?.();
      this.socket.resume();
    };
    if (this.budget.take(cost, grant)) {
      framer.assemblePending?.();
      return 'ok';
    }
    this.waiter = grant;
    this.socket.pause();
    const onTimeout = this.opts.onWaitTimeout;
    if (onTimeout) {
      const waitMs = this.opts.waitMs ?? this.budget.waitMs;
      this.waitTimer = setTimeout(() => {
        this.waitTimer = undefined;
        if (this.waiter !== grant) return;
        this.stopWait();
        this.arriving = 0;
        this.arrivingId = -1;
        onTimeout(size, waitMs);
      }, waitMs);
      this.waitTimer.unref();
    }
    return 'ok';
  }

  /** Gives back `bytes` of {@link completed}'s once their message has been written on (or dropped). */
  released(bytes: number): void {
    if (this.closed || bytes <= 0) return;
    this.inFlight -= bytes;
    this.budget?.release(bytes);
  }

  /**
   * Gives back `bytes` once `out` has no more than its high-water mark buffered (at once when it has
   * not asked for a drain): the message has been handed to the kernel.
   */
  releaseAfterDrain(bytes: number, out: Writable): void {
    if (bytes <= 0) return;
    if (out.writableNeedDrain) {
      this.outs.set(out, handedOn(out));
      out.once('drain', () => {
        this.outs.delete(out);
        this.movedNow();
        this.released(bytes);
      });
    } else this.released(bytes);
  }

  /** The connection closed: everything held is given back, a wait is withdrawn. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unregister?.();
    this.outs.clear();
    if (this.waiter) {
      this.stopWait();
      this.arriving = 0;
    }
    this.budget?.release(this.arriving + this.inFlight);
    this.arriving = 0;
    this.inFlight = 0;
  }
}

/** The socket a held message is written to: its buffer state, and its byte counts when it has them (net.Socket). */
export interface Writable {
  readonly writableNeedDrain: boolean;
  readonly writableLength?: number;
  readonly bytesWritten?: number;
  once(e: 'drain', f: () => void): unknown;
}

/** Bytes `out` has handed to the kernel: written minus still buffered (0 without the counts). */
function handedOn(out: Writable): number {
  return (out.bytesWritten ?? 0) - (out.writableLength ?? 0);
}

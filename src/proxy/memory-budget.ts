// One budget for the bytes of large protocol messages held in memory, shared by every session: taken in order, waited for, released.
import os from 'node:os';
import { collectGarbageSoon } from './collect-garbage.js';

/**
 * Messages at least this large (bytes, header included) are counted against the budget. Smaller
 * ones are bounded per connection by the sockets' own backpressure (a paused socket holds at most
 * a chunk or two), so their sum is a constant per connection.
 */
export const LARGE_MESSAGE_BYTES = 1 << 20;

/**
 * What one large message held costs, as a multiple of its size: while it is held it is in memory
 * about four times over (the socket's chunks, the framed message, the decoded text, the rewrite's
 * copy), so the budget counts each at four times its size and bounds resident memory, not only
 * one copy (measured: 24 × 60 MB with one copy counted peaked at 2.1 GB over a 256 MiB budget).
 */
export const HELD_COPIES = 4;

/** The budget a large message of `size` bytes takes while held (bytes): {@link HELD_COPIES} × size. */
export function heldCost(size: number): number {
  return size * HELD_COPIES;
}

/**
 * The default budget: a quarter of the memory of the machine, or of the cgroup's limit when the
 * process runs under a lower one (process.constrainedMemory). Output: bytes.
 */
export function defaultMemoryBudget(): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  const machine = os.totalmem();
  const total = constrained > 0 && constrained < machine ? constrained : machine;
  return Math.floor(total / 4);
}

/** How long a message waits for budget by default before it is given up (ms; limits.memory_wait_ms). */
export const DEFAULT_MEMORY_WAIT_MS = 60_000;

/** A wait for budget: called once, with no arguments, when the bytes have been taken. */
export type Grant = () => void;

/**
 * How long (ms) a wait for budget may last while a session holding budget makes no progress
 * (its client neither reads what is held for it nor sends the rest of a message it announced)
 * before that session is ended (see {@link MemoryBudget}).
 */
export const STALLED_HOLD_MS = 5000;

/** A session's claim on the budget, as {@link MemoryBudget} sees it to end a stalled one. */
export interface BudgetHolder {
  /** Bytes it holds now. */
  held(): number;
  /** When it last moved (ms since the epoch): bytes of a held message arrived or were handed on. */
  progressAt(now: number): number;
  /** Ends its session (FATAL 53200); its bytes are then given back. */
  evict(): void;
}

/**
 * The global budget for buffered message bytes (issue 16 item 2, `limits.memory_budget_bytes`).
 * A connection takes the size of a large message when its header arrives and gives it back once the
 * message has been written on (its socket drained) or dropped. Takes are served first come, first
 * served: a waiter that does not fit yet blocks later ones that would, so a large message is never
 * starved by a stream of smaller ones. Every operation is O(1) but the release that grants waiters.
 */
export class MemoryBudget {
  private used = 0;
  private readonly queue: { bytes: number; grant: Grant; at: number }[] = [];
  private readonly holders = new Set<BudgetHolder>();
  private watch: NodeJS.Timeout | undefined;

  /**
   * Input: the budget in bytes (> 0), how long a wait may last while a holder is stalled (ms,
   * default {@link STALLED_HOLD_MS}), and how long a message may wait at all (ms, > 0;
   * limits.memory_wait_ms) before MessageHold gives it up (53200): holders that all move, however
   * slowly, are never evicted, and a wait must still end.
   *
   * A wait is never ended by a holder that is not there: one session whose client stops reading a
   * large row it asked for (or announces a large message and sends no more of it) would otherwise
   * hold its share forever, and every other session's large messages would wait behind it. So
   * while some take has waited `stallMs`, the holder that has made no progress for `stallMs` and
   * holds the most is evicted (its session ends with FATAL 53200), once per check, until the head
   * of the queue fits. A holder that moves, however slowly, is never evicted.
   */
  constructor(
    readonly limit: number,
    private readonly stallMs = STALLED_HOLD_MS,
    readonly waitMs: number = DEFAULT_MEMORY_WAIT_MS,
  ) {}

  /** Registers a holder that may be evicted when stalled; returns the function that removes it. */
  register(h: BudgetHolder): () => void {
    this.holders.add(h);
    return () => {
      this.holders.delete(h);
    };
  }

  /** Bytes taken now. */
  get inUse(): number {
    return this.used;
  }

  /** Waiters queued now. */
  get waiting(): number {
    return this.queue.length;
  }

  /** True when `bytes` can never be taken (more than the whole budget): the message must be refused. */
  tooLarge(bytes: number): boolean {
    return bytes > this.limit;
  }

  /**
   * Takes `bytes` (at most `limit`). Output: true when taken now; false when queued, and `grant`
   * is called once they have been taken. A queued take is withdrawn with {@link cancel}.
   */
  take(bytes: number, grant: Grant): boolean {
    if (this.queue.length === 0 && this.used + bytes <= this.limit) {
      this.used += bytes;
      return true;
    }
    this.queue.push({ bytes, grant, at: Date.now() });
    this.watch ??= setInterval(() => this.checkStalled(), Math.max(50, Math.floor(this.stallMs / 4)));
    this.watch.unref();
    return false;
  }

  /** While a take waits: evicts the largest holder stalled for stallMs once the head has waited that long. */
  private checkStalled(): void {
    const head = this.queue[0];
    if (!head) {
      clearInterval(this.watch);
      this.watch = undefined;
      return;
    }
    const now = Date.now();
    if (now - head.at < this.stallMs) return;
    let worst: BudgetHolder | undefined;
    for (const h of this.holders) {
      if (h.held() <= 0 || now - h.progressAt(now) < this.stallMs) continue;
      if (!worst || h.held() > worst.held()) worst = h;
    }
    if (worst) {
      this.holders.delete(worst);
      worst.evict();
    }
  }

  /** Withdraws a queued take (its connection closed); a take already granted must be released instead. */
  cancel(grant: Grant): void {
    const i = this.queue.findIndex((w) => w.grant === grant);
    if (i >= 0) this.queue.splice(i, 1);
    this.serve();
  }

  /**
   * Gives back `bytes` taken earlier and grants the waiters that now fit, in order. Nothing given
   * back (a connection closing that held no large message): nothing to grant or collect (issue 18:
   * every session's close asked for a full collection, 30–230 ms of CPU each under pgbench).
   */
  release(bytes: number): void {
    if (bytes <= 0) return;
    this.used = Math.max(0, this.used - bytes);
    this.serve();
    // The released message is garbage now: have it collected while the budget is quiet.
    collectGarbageSoon();
  }

  private serve(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0] as { bytes: number; grant: Grant };
      if (this.used + head.bytes > this.limit) return;
      this.queue.shift();
      this.used += head.bytes;
      head.grant();
    }
    clearInterval(this.watch);
    this.watch = undefined;
  }
}

/** What {@link MessageHold.arrive} found: go on, or a message that can never fit (refuse it, 53200). */
export type HoldVerdict = 'ok' | 'too-large';

/** The framer a {@link MessageHold} reads (MessageFramer): the message now arriving, and assembling it in place. */
export interface HeldFramer {
  readonly pendingMessageBytes: number;
  readonly cutCount: number;
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
  /** When bytes of a held message last arrived or were handed on (ms since the epoch). */
  private moved = Date.now();
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

  private stopWait(): void {
    if (this.waiter) this.budget?.cancel(this.waiter);
    this.waiter = undefined;
    if (this.waitTimer) clearTimeout(this.waitTimer);
    this.waitTimer = undefined;
  }

  /** The last time this hold moved: a held message written on since the last look counts as now. */
  private progressAt(now: number): number {
    for (const [out, before] of this.outs) {
      const handed = handedOn(out);
      if (handed > before) {
        this.outs.set(out, handed);
        this.moved = now;
      }
    }
    return this.moved;
  }

  /**
   * After a chunk was framed, before {@link arrive}: the bytes taken for the message that the chunk
   * completed (the first frame the push returned), now in flight; 0 when none. The caller gives
   * them back with {@link released} once the message has been written on or dropped.
   */
  completed(framer: { readonly cutCount: number }): number {
    if (this.arrivingId < 0 || framer.cutCount <= this.arrivingId) return 0;
    this.moved = Date.now();
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
    // A chunk of the arriving message came: the client is sending it.
    if (this.arrivingId >= 0) this.moved = Date.now();
    if (this.waiter) {
      this.socket.pause();
      return 'ok';
    }
    if (!this.budget || this.closed || this.arrivingId >= 0) return 'ok';
    const size = framer.pendingMessageBytes;
    if (size < LARGE_MESSAGE_BYTES) return 'ok';
    const cost = heldCost(size);
    if (this.budget.tooLarge(cost)) return 'too-large';
    this.arriving = cost;
    this.arrivingId = framer.cutCount;
    this.moved = Date.now();
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
        this.moved = Date.now();
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

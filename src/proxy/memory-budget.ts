// One budget for the bytes of large protocol messages held in memory, shared by every session: taken in order, waited for, released.
import os from 'node:os';
import { collectGarbageSoon } from './collect-garbage.js';
import { ResponsiveClock } from './responsive-clock.js';

/**
 * Messages at least this large (bytes, header included) are counted against the budget. Smaller
 * ones are bounded per connection by the sockets' own backpressure (a paused socket holds at most
 * a chunk or two), so their sum is a constant per connection.
 */
export const LARGE_MESSAGE_BYTES = 1 << 20;

/**
 * What one large message held costs, as a multiple of its size, when it may be rewritten (its
 * session has columns hidden from it): while held it is in memory four times over (the framed
 * message, the decoded text, the rewrite's bytes and its text; the bytes go upstream as they are).
 * Counting each at four times its size bounds resident memory, not only one copy (measured: 24 ×
 * 60 MB with one copy counted peaked at 2.1 GB over a 256 MiB budget).
 */
export const HELD_COPIES = 4;

/**
 * The same for a client message that goes upstream as it came, from a client that sees everything
 * (nothing of its is rewritten): the framed message and its decoded text. (The upstream's large
 * messages stay at HELD_COPIES.)
 */
export const PLAIN_COPIES = 2;

/** The budget a large message of `size` bytes takes while held (bytes): `copies` × size. */
export function heldCost(size: number, copies: number = HELD_COPIES): number {
  return size * copies;
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

/** The part of the budget all sessions' prepared statements may keep together (issue 16 item 2). */
export const RETAINED_SHARE = 1 / 2;

/** How long a message waits for budget by default before it is given up (ms; limits.memory_wait_ms). */
export const DEFAULT_MEMORY_WAIT_MS = 60_000;

/** A wait for budget: called once, with no arguments, when the bytes have been taken. */
export type Grant = () => void;

/**
 * How long (ms) a wait for budget may last while a session holding budget makes no progress
 * (its client neither reads what is held for it nor sends the rest of a message it announced, or
 * does either slower than MessageHold's pace) before that session is ended (see
 * {@link MemoryBudget}).
 */
export const STALLED_HOLD_MS = 5000;

/** A session's claim on the budget, as {@link MemoryBudget} sees it to end a stalled one. */
export interface BudgetHolder {
  /** Bytes it holds now. */
  held(): number;
  /**
   * When it last moved, on the budget's clock ({@link MemoryBudget.now}; `now` is its reading): a
   * held message completed or was written on, or enough of its bytes arrived or were handed on to
   * keep its pace (message-hold.ts).
   */
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
  /** Stall time is counted on it: the event loop's blocked time (pgwarden's slowness) left out. */
  private readonly clock = new ResponsiveClock();

  /**
   * Input: the budget in bytes (> 0), how long a wait may last while a holder is stalled (ms,
   * default {@link STALLED_HOLD_MS}), and how long a message may wait at all (ms, > 0;
   * limits.memory_wait_ms) before MessageHold gives it up (53200): holders that all keep their
   * pace are never evicted, and a wait must still end.
   *
   * A wait is never ended by a holder that is not there: one session whose client stops reading a
   * large row it asked for (or announces a large message and sends no more of it) would otherwise
   * hold its share forever, and every other session's large messages would wait behind it. So
   * while some take has waited `stallMs`, the holder that has made no progress for `stallMs` and
   * holds the most is evicted (its session ends with FATAL 53200), once per check, until the head
   * of the queue fits. A holder that keeps its pace (bytes enough to finish what it holds within
   * `waitMs`, message-hold.ts) is never evicted; one byte a second is no pace (attack: it held
   * 40 MB for days while every other session's large messages waited out `waitMs`).
   */
  constructor(
    readonly limit: number,
    readonly stallMs = STALLED_HOLD_MS,
    readonly waitMs: number = DEFAULT_MEMORY_WAIT_MS,
  ) {}

  /**
   * The time stalls are measured in (ms, Date.now()'s scale less the time the event loop was
   * blocked while anything was held or waited for: responsive-clock.ts). A client is stalled only
   * for time pgwarden could have read from it or written to it.
   */
  now(): number {
    return this.clock.now();
  }

  /** Runs the clock while messages are held or wait (prepared statements kept do not need it). */
  private clockWhileHeld(): void {
    if (this.queue.length > 0 || this.used - this.kept > 0) this.clock.start();
    else this.clock.stop();
  }

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

  /** Bytes kept by prepared statements of all sessions now (retained-statements.ts), part of {@link inUse}. */
  get retained(): number {
    return this.kept;
  }
  private kept = 0;

  /**
   * Whether `bytes` more may be kept by prepared statements now, without waiting: they fit in the
   * budget, and all sessions' prepared statements stay within {@link RETAINED_SHARE} of it (the
   * rest is for messages in flight, which prepared statements never make wait for good).
   */
  canRetain(bytes: number): boolean {
    return this.used + bytes <= this.limit && this.kept + bytes <= this.limit * RETAINED_SHARE;
  }

  /** Counts `bytes` kept by a prepared statement (admitted by {@link canRetain}, or put back as it was). */
  retain(bytes: number): void {
    this.used += bytes;
    this.kept += bytes;
  }

  /** Gives back `bytes` of {@link retain}'s: the statement was closed. */
  unretain(bytes: number): void {
    this.kept = Math.max(0, this.kept - bytes);
    // A closed statement's few kilobytes are not worth a full collection: under the extended
    // protocol every Parse replaces the unnamed statement, and a forced GC every 500 ms of a heap
    // that holds the catalog and the parser doubled pgbench's CPU per transaction (issue 18).
    if (bytes >= LARGE_MESSAGE_BYTES) this.release(bytes);
    else this.giveBack(bytes);
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
      this.clockWhileHeld();
      return true;
    }
    this.clock.start();
    this.queue.push({ bytes, grant, at: this.clock.now() });
    this.watch ??= setInterval(() => this.checkStalled(), this.checkEveryMs());
    this.watch.unref();
    return false;
  }

  /** How often the stall check runs while a take waits (ms). */
  private checkEveryMs(): number {
    return Math.max(50, Math.floor(this.stallMs / 4));
  }

  /** While a take waits: evicts the largest holder stalled for stallMs once the head has waited that long. */
  private checkStalled(): void {
    const head = this.queue[0];
    if (!head) {
      clearInterval(this.watch);
      this.watch = undefined;
      return;
    }
    const now = this.clock.now();
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
    this.clockWhileHeld();
  }

  /**
   * Gives back `bytes` taken earlier and grants the waiters that now fit, in order. Nothing given
   * back (a connection closing that held no large message): nothing to grant or collect (issue 18:
   * every session's close asked for a full collection, 30–230 ms of CPU each under pgbench).
   */
  release(bytes: number): void {
    if (bytes <= 0) return;
    this.giveBack(bytes);
    // The released message is garbage now: have it collected while the budget is quiet.
    collectGarbageSoon();
  }

  /** {@link release} without asking for a collection. */
  private giveBack(bytes: number): void {
    if (bytes <= 0) return;
    this.used = Math.max(0, this.used - bytes);
    this.serve();
    this.clockWhileHeld();
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

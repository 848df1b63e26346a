// A clock that stands still while the event loop is blocked: how long a peer has had the chance to move, not how long pgwarden took.
import { performance } from 'node:perf_hooks';

/** How often the clock's timer runs while it is started (ms). */
export const TICK_MS = 50;

/**
 * A gap between two ticks beyond this (ms) is time the event loop was blocked (another session's
 * analysis, a collection, a starved machine): twice the tick, so a timer's ordinary lateness counts.
 */
export const BLOCKED_AFTER_MS = 2 * TICK_MS;

/**
 * Milliseconds since the epoch minus the time the event loop was blocked while the clock ran
 * (issue 16: the memory budget measured a client's stall in wall time, and while one session's
 * 60 MB statement was analyzed, 5–9 of 24 legitimate clients of the burst, whose bytes pgwarden
 * had not even read, were evicted as stalled). A timer ticks every {@link TICK_MS} while started;
 * any gap between ticks (or since the last tick, read at {@link now}) beyond {@link BLOCKED_AFTER_MS}
 * is left out. The clock never runs backwards, and still advances on a loop that is late all the
 * time (at least {@link BLOCKED_AFTER_MS} per tick), so a client that truly does not move is still
 * found stalled on a loaded machine. The lag measured is the one perf_hooks' monitorEventLoopDelay
 * samples (a timer's lateness), kept as a sum so that it can be subtracted from a span.
 */
export class ResponsiveClock {
  private blocked = 0;
  private lastTick = performance.now();
  private timer: NodeJS.Timeout | undefined;

  /** The clock's reading (ms, on Date.now()'s scale, less the blocked time so far). */
  now(): number {
    return Date.now() - this.blocked - (this.timer ? this.pendingBlocked(performance.now()) : 0);
  }

  /** Starts measuring the loop (idempotent); the timer does not keep the process alive. */
  start(): void {
    if (this.timer) return;
    this.lastTick = performance.now();
    this.timer = setInterval(() => this.tick(), TICK_MS);
    this.timer.unref();
  }

  /** Stops measuring (nothing waits on the clock); the blocked time counted so far stays left out. */
  stop(): void {
    if (!this.timer) return;
    this.tick();
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    const t = performance.now();
    this.blocked += this.pendingBlocked(t);
    this.lastTick = t;
  }

  /** The blocked part of the span since the last tick, as of `t` (performance.now()). */
  private pendingBlocked(t: number): number {
    return Math.max(0, t - this.lastTick - BLOCKED_AFTER_MS);
  }
}

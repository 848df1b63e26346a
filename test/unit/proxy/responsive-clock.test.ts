// The memory budget's clock: the time the event loop was blocked is left out, so pgwarden's own slowness never counts as a client's stall.
import { describe, expect, it } from 'vitest';
import { MemoryBudget } from '../../../src/proxy/memory-budget.js';
import { BLOCKED_AFTER_MS, ResponsiveClock } from '../../../src/proxy/responsive-clock.js';

/** Keeps the event loop busy for `ms` (what an analysis of a 60 MB statement does to every other session). */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy
  }
}

describe('ResponsiveClock', () => {
  it('stands still while the event loop is blocked, read before or after its timer ran again', async () => {
    const clock = new ResponsiveClock();
    clock.start();
    try {
      const wall0 = Date.now();
      const c0 = clock.now();
      block(600);
      // Read in the same turn as the block: the span since the last tick is left out already.
      const during = clock.now() - c0;
      expect(during).toBeLessThanOrEqual(Date.now() - wall0 - (600 - BLOCKED_AFTER_MS) + 2);
      await new Promise((r) => setTimeout(r, 200));
      // After its timer ran: the same time left out, and the clock never went back.
      expect(clock.now() - c0).toBeGreaterThanOrEqual(during);
      expect(clock.now() - c0).toBeLessThanOrEqual(Date.now() - wall0 - (600 - BLOCKED_AFTER_MS) + 2);
    } finally {
      clock.stop();
    }
  });

  it('advances with the wall clock while the loop answers, and never past it', async () => {
    const clock = new ResponsiveClock();
    clock.start();
    try {
      const wall0 = Date.now();
      const c0 = clock.now();
      await new Promise((r) => setTimeout(r, 500));
      const advanced = clock.now() - c0;
      // A loaded machine's late timers may leave out some of it; a quiet one none.
      expect(advanced).toBeGreaterThan(0);
      expect(advanced).toBeLessThanOrEqual(Date.now() - wall0 + 1);
    } finally {
      clock.stop();
    }
  });

  it('the budget reads it while a message is held: a blocked loop is no stall time', () => {
    const b = new MemoryBudget(100, 1000);
    expect(b.take(80, () => {})).toBe(true);
    const t0 = b.now();
    const wall0 = Date.now();
    block(600);
    expect(b.now() - t0).toBeLessThanOrEqual(Date.now() - wall0 - (600 - BLOCKED_AFTER_MS) + 2);
    b.release(80);
  });
});

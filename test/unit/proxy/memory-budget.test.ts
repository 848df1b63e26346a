// The memory budget: takes in order, waits, releases; a connection's hold pauses its socket and gives everything back at close.
import { describe, expect, it, vi } from 'vitest';
import {
  HELD_COPIES,
  heldCost,
  LARGE_MESSAGE_BYTES,
  MemoryBudget,
  PLAIN_COPIES,
} from '../../../src/proxy/memory-budget.js';
import { MessageHold } from '../../../src/proxy/message-hold.js';
import { MessageFramer } from '../../../src/wire/framer.js';
import * as fe from '../../../src/wire/frontend-encode.js';

const collections = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../../src/proxy/collect-garbage.js', () => ({
  collectGarbageSoon: () => {
    collections.count++;
  },
}));

/** A socket stand-in that records pause/resume. */
function fakeSocket() {
  const calls: string[] = [];
  return {
    calls,
    pause: () => calls.push('pause'),
    resume: () => calls.push('resume'),
  };
}

describe('MemoryBudget', () => {
  it('evicts the largest holder stalled for stallMs once a take has waited that long, never one that moves', () => {
    vi.useFakeTimers();
    try {
      const b = new MemoryBudget(100, 1000);
      const evicted: string[] = [];
      let movedAt = Date.now();
      const holder = (name: string, bytes: number, moves: boolean) => {
        const off = b.register({
          held: () => bytes,
          progressAt: (now) => (moves ? movedAt : now - 10_000),
          evict: () => {
            evicted.push(name);
            off();
            b.release(bytes);
          },
        });
        b.take(bytes, () => {});
      };
      holder('slow-but-reading', 40, true);
      holder('stalled-small', 10, false);
      holder('stalled-large', 30, false);
      let granted = false;
      expect(b.take(60, () => (granted = true))).toBe(false);
      // Before the wait has lasted stallMs, nobody is evicted.
      movedAt = Date.now() + 900;
      vi.advanceTimersByTime(900);
      expect(evicted).toEqual([]);
      movedAt = Date.now() + 1000;
      vi.advanceTimersByTime(100);
      // The largest stalled holder goes first; 30 freed is not enough (80 - 30 + 60 > 100): then the next.
      expect(evicted).toEqual(['stalled-large']);
      expect(granted).toBe(false);
      vi.advanceTimersByTime(250);
      expect(evicted).toEqual(['stalled-large', 'stalled-small']);
      expect(granted).toBe(true);
      // With nothing waiting, no check runs: a stalled holder then costs no one anything.
      vi.advanceTimersByTime(10_000);
      expect(evicted).toEqual(['stalled-large', 'stalled-small']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('takes what fits, queues the rest first come first served, and grants on release', () => {
    const b = new MemoryBudget(100);
    const granted: string[] = [];
    expect(b.take(60, () => granted.push('a'))).toBe(true);
    expect(b.take(50, () => granted.push('b'))).toBe(false);
    // 30 would fit, but b waits first: no overtaking.
    expect(b.take(30, () => granted.push('c'))).toBe(false);
    expect(b.waiting).toBe(2);
    b.release(60);
    expect(granted).toEqual(['b', 'c']);
    expect(b.inUse).toBe(80);
    expect(b.tooLarge(101)).toBe(true);
    expect(b.tooLarge(100)).toBe(false);
  });

  it('asks for no collection when a small prepared statement is given back, one for a large one', () => {
    const b = new MemoryBudget(4 * LARGE_MESSAGE_BYTES);
    const before = collections.count;
    b.retain(2048);
    b.unretain(2048);
    expect(collections.count).toBe(before);
    expect(b.inUse).toBe(0);
    b.retain(LARGE_MESSAGE_BYTES);
    b.unretain(LARGE_MESSAGE_BYTES);
    expect(collections.count).toBe(before + 1);
    expect(b.inUse).toBe(0);
  });

  it('asks for a collection only when bytes were given back (a session closing that held nothing asks for none)', () => {
    const b = new MemoryBudget(100);
    const before = collections.count;
    const hold = new MessageHold(b, fakeSocket());
    hold.close();
    b.release(0);
    expect(collections.count).toBe(before);
    b.take(40, () => {});
    b.release(40);
    expect(collections.count).toBe(before + 1);
    expect(b.inUse).toBe(0);
  });

  it('a cancelled wait is never granted and lets the next one through', () => {
    const b = new MemoryBudget(100);
    b.take(90, () => {});
    const late = () => {
      throw new Error('granted after cancel');
    };
    b.take(50, late);
    let next = false;
    b.take(10, () => {
      next = true;
    });
    b.cancel(late);
    expect(next).toBe(true);
    expect(b.inUse).toBe(100);
  });
});

describe('MessageHold with a MessageFramer', () => {
  const big = fe.query(`SELECT '${'a'.repeat(LARGE_MESSAGE_BYTES * 2)}'`);
  const size = big.length;

  it('counts a message that goes on as it came at PLAIN_COPIES times its size', () => {
    expect(heldCost(size)).toBe(size * HELD_COPIES);
    const budget = new MemoryBudget(heldCost(size) * 2);
    const hold = new MessageHold(budget, fakeSocket(), undefined, { copies: () => PLAIN_COPIES });
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    framer.push(big.subarray(0, 1000));
    expect(hold.arrive(framer)).toBe('ok');
    expect(budget.inUse).toBe(size * PLAIN_COPIES);
    hold.close();
    expect(budget.inUse).toBe(0);
  });

  it('takes the held cost of a large message when its header arrives, and hands it over when the message is cut', () => {
    const budget = new MemoryBudget(heldCost(size) * 2);
    const socket = fakeSocket();
    const hold = new MessageHold(budget, socket);
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    expect(framer.push(big.subarray(0, 1000))).toEqual([]);
    expect(framer.pendingMessageBytes).toBe(size);
    expect(hold.completed(framer)).toBe(0);
    expect(hold.arrive(framer)).toBe('ok');
    expect(budget.inUse).toBe(heldCost(size));
    const frames = framer.push(big.subarray(1000));
    expect(frames).toHaveLength(1);
    expect(hold.completed(framer)).toBe(heldCost(size));
    expect(framer.pendingMessageBytes).toBe(0);
    hold.releaseAfterDrain(heldCost(size), { writableNeedDrain: false, once: () => {} });
    expect(budget.inUse).toBe(0);
    expect(socket.calls).toEqual([]);
  });

  // Attack finding (fixed): any byte counted as progress, so a client sending a held message at a
  // byte a second was never evicted while others waited (test/e2e/attacks/memory-budget-hold.test.ts).
  it('a message arriving slower than the pace that finishes it within waitMs is stalled; at pace it moves', () => {
    vi.useFakeTimers();
    try {
      // Pace: size × stallMs / waitMs = size / 5 bytes per stall window (2 s); paced sends that each second.
      const budget = new MemoryBudget(heldCost(size) * 4, 2000, 10_000);
      const evicted: string[] = [];
      const run = (name: string, bytesPerSecond: number) => {
        const hold = new MessageHold(budget, fakeSocket(), () => evicted.push(name));
        const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
        let at = 0;
        const send = (n: number) => {
          framer.push(big.subarray(at, at + n));
          at += n;
          hold.completed(framer);
          hold.arrive(framer);
        };
        send(100);
        return () => send(bytesPerSecond);
      };
      const slow = run('one byte a second', 1);
      const paced = run('at pace', Math.ceil(size / 5));
      // Someone waits for more than is left.
      budget.take(heldCost(size) * 3, () => {});
      for (let t = 0; t < 4; t++) {
        slow();
        paced();
        vi.advanceTimersByTime(1000);
      }
      expect(evicted).toEqual(['one byte a second']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a message received whole and waiting in pgwarden is no stall while its client reads what it is sent; it is once the client stops reading', () => {
    vi.useFakeTimers();
    try {
      const evicted: string[] = [];
      let unread = false;
      /** A hold on a fresh budget whose one large message arrived whole and is never written on; then someone waits. */
      const queued = (name: string, peerAtFault?: () => boolean) => {
        const budget = new MemoryBudget(heldCost(size) * 4, 2000, 10_000);
        const hold = new MessageHold(budget, fakeSocket(), () => evicted.push(name), {
          ...(peerAtFault ? { peerAtFault } : {}),
        });
        const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
        framer.push(big.subarray(0, 100));
        hold.arrive(framer);
        framer.push(big.subarray(100));
        expect(hold.completed(framer)).toBe(heldCost(size));
        expect(budget.take(heldCost(size) * 3 + 1, () => {})).toBe(false);
      };
      queued('client reads', () => unread);
      vi.advanceTimersByTime(10_000);
      expect(evicted).toEqual([]);
      unread = true;
      vi.advanceTimersByTime(5000);
      expect(evicted).toEqual(['client reads']);
      // Without peerAtFault, a queued message stalls as before.
      queued('no option');
      vi.advanceTimersByTime(5000);
      expect(evicted).toEqual(['client reads', 'no option']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('pauses the socket while the budget is taken by another connection, resumes once granted', () => {
    const budget = new MemoryBudget(heldCost(size) + 10);
    budget.take(20, () => {});
    const socket = fakeSocket();
    const hold = new MessageHold(budget, socket);
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    framer.push(big.subarray(0, 100));
    hold.arrive(framer);
    expect(socket.calls).toEqual(['pause']);
    // Someone else resumed it: the next chunk pauses it again.
    framer.push(big.subarray(100, 200));
    hold.arrive(framer);
    expect(socket.calls).toEqual(['pause', 'pause']);
    budget.release(20);
    expect(socket.calls).toEqual(['pause', 'pause', 'resume']);
    expect(budget.inUse).toBe(heldCost(size));
    hold.close();
    expect(budget.inUse).toBe(0);
  });

  it('counts a held message at four times its size: one that fits once but not four times is too large', () => {
    const budget = new MemoryBudget(size * 2);
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    framer.push(big.subarray(0, 1000));
    expect(new MessageHold(budget, fakeSocket()).arrive(framer)).toBe('too-large');
    expect(budget.inUse).toBe(0);
  });

  it('reports a message larger than the whole budget; the framer then drops it and frames what follows', () => {
    const budget = new MemoryBudget(LARGE_MESSAGE_BYTES);
    const hold = new MessageHold(budget, fakeSocket());
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    framer.push(big.subarray(0, 5000));
    expect(hold.arrive(framer)).toBe('too-large');
    expect(framer.skipPending()).toBe(0x51);
    expect(framer.buffered).toBe(0);
    const after = fe.query('SELECT 1');
    const frames = framer.push(Buffer.concat([big.subarray(5000), after]));
    expect(frames.map((f) => f.bytes)).toEqual([after]);
    expect(budget.inUse).toBe(0);
  });

  it('counts nothing for small messages or without a budget', () => {
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    framer.push(fe.query('SELECT 1').subarray(0, 8));
    const budget = new MemoryBudget(LARGE_MESSAGE_BYTES);
    expect(new MessageHold(budget, fakeSocket()).arrive(framer)).toBe('ok');
    expect(budget.inUse).toBe(0);
  });

  it('once granted, the framer assembles the message in one buffer: the chunks are not kept', () => {
    const budget = new MemoryBudget(heldCost(size) * 2);
    const hold = new MessageHold(budget, fakeSocket());
    const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
    framer.push(big.subarray(0, 1000));
    hold.arrive(framer);
    expect(framer.pendingMessageBytes).toBe(size);
    expect(framer.buffered).toBe(1000);
    const after = fe.query('SELECT 1');
    const step = 64 * 1024;
    const frames = [];
    for (let at = 1000; at < size; at += step) {
      const end = Math.min(size, at + step);
      frames.push(
        ...framer.push(end === size ? Buffer.concat([big.subarray(at, end), after]) : big.subarray(at, end)),
      );
    }
    expect(frames).toHaveLength(2);
    expect(frames[0]?.bytes.equals(big)).toBe(true);
    expect(frames[1]?.bytes.equals(after)).toBe(true);
    expect(frames[0]?.payload.equals(big.subarray(5))).toBe(true);
    expect(framer.buffered).toBe(0);
    expect(hold.completed(framer)).toBe(heldCost(size));
  });

  it('a wait longer than waitMs is withdrawn and reported; the message can then be skipped', () => {
    vi.useFakeTimers();
    try {
      const budget = new MemoryBudget(heldCost(size) + 10, 60_000, 5000);
      budget.take(20, () => {});
      const socket = fakeSocket();
      const timedOut: [number, number][] = [];
      const hold = new MessageHold(budget, socket, undefined, {
        onWaitTimeout: (s, ms) => timedOut.push([s, ms]),
      });
      const framer = new MessageFramer({ maxMessageBytes: size * 4, startup: false });
      framer.push(big.subarray(0, 100));
      hold.arrive(framer);
      expect(budget.waiting).toBe(1);
      vi.advanceTimersByTime(4999);
      expect(timedOut).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(timedOut).toEqual([[size, 5000]]);
      expect(budget.waiting).toBe(0);
      expect(framer.skipPending()).toBe(0x51);
      // A later release grants nothing to the withdrawn wait, and nothing is counted for it.
      budget.release(20);
      expect(budget.inUse).toBe(0);
      expect(socket.calls).toEqual(['pause']);
      hold.close();
      expect(budget.inUse).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

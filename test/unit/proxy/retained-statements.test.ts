// Prepared statements counted against the memory budget: admission within the session's share and the budget's, every map change counted, the session's end gives everything back.
import { describe, expect, it } from 'vitest';
import { MapUndo } from '../../../src/proxy/expected-replies.js';
import { MemoryBudget, RETAINED_SHARE } from '../../../src/proxy/memory-budget.js';
import {
  RETAINED_ENTRY_BYTES,
  RetainedStatements,
  retainedCost,
  SESSION_RETAINED_SHARE,
} from '../../../src/proxy/retained-statements.js';

const LIMIT = 1_000_000;

describe('retainedCost', () => {
  it('counts two bytes a code unit of each distinct text, plus the entry', () => {
    expect(retainedCost('abc')).toBe(6 + RETAINED_ENTRY_BYTES);
    expect(retainedCost('abc', 'abcdef')).toBe(18 + RETAINED_ENTRY_BYTES);
  });
});

describe('RetainedStatements', () => {
  it('admits up to the session share, counts every set, replace, delete and clear in the budget', () => {
    const budget = new MemoryBudget(LIMIT);
    const r = new RetainedStatements(budget);
    const m = r.map((s: string) => s.length);
    const big = 'x'.repeat(LIMIT * SESSION_RETAINED_SHARE - 10);
    expect(r.admits(m.growth('a', big))).toBe(true);
    m.set('a', big);
    expect([r.held, budget.retained, budget.inUse]).toEqual([big.length, big.length, big.length]);
    expect(r.admits(m.growth('b', 'y'.repeat(11)))).toBe(false);
    // Replacing by a smaller one is always admitted (it keeps less).
    expect(r.admits(m.growth('a', 'small'))).toBe(true);
    m.set('a', 'small');
    expect(r.held).toBe(5);
    m.set('b', 'bb');
    expect(m.delete('b')).toBe(true);
    expect(m.delete('b')).toBe(false);
    expect(r.held).toBe(5);
    m.clear();
    expect([r.held, budget.retained, budget.inUse]).toEqual([0, 0, 0]);
  });

  it("admits no more than the budget's share for prepared statements, all sessions together", () => {
    const budget = new MemoryBudget(LIMIT);
    const sessions = [1, 2, 3].map(() => new RetainedStatements(budget));
    const share = LIMIT * SESSION_RETAINED_SHARE;
    const [a, b, c] = sessions.map((s) => s.map((n: number) => n)) as [
      ReturnType<RetainedStatements['map']>,
      ReturnType<RetainedStatements['map']>,
      ReturnType<RetainedStatements['map']>,
    ];
    a.set('x', share);
    b.set('x', share);
    expect(budget.retained).toBe(LIMIT * RETAINED_SHARE);
    expect(sessions[2]?.admits(1)).toBe(false);
    b.delete('x');
    expect(sessions[2]?.admits(share)).toBe(true);
    c.set('x', share);
    expect(budget.retained).toBe(2 * share);
  });

  it('leaves in-flight messages no less than the rest of the budget', () => {
    const budget = new MemoryBudget(LIMIT);
    expect(budget.take(LIMIT - 100, () => {})).toBe(true);
    const r = new RetainedStatements(budget);
    expect(r.admits(101)).toBe(false);
    expect(r.admits(100)).toBe(true);
  });

  it("follows MapUndo's restores, and gives everything back at close", () => {
    const budget = new MemoryBudget(LIMIT);
    const r = new RetainedStatements(budget);
    const m = r.map((s: string) => s.length);
    m.set('s', 'old');
    const undo = new MapUndo(m as Map<string, unknown>, 's');
    m.set('s', 'newer');
    expect(r.held).toBe(5);
    undo.run();
    expect([m.get('s'), r.held]).toEqual(['old', 3]);
    m.set('t', 'tttt');
    r.close();
    expect([budget.retained, budget.inUse]).toEqual([0, 0]);
    // After the end nothing counts.
    m.set('u', 'uuuu');
    m.clear();
    expect([budget.retained, budget.inUse]).toEqual([0, 0]);
  });

  it('counts nothing without a budget', () => {
    const r = new RetainedStatements(undefined);
    expect(r.admits(Number.MAX_SAFE_INTEGER)).toBe(true);
  });
});

// LineBatch: lines reach the destination in order, joined, once they add up to the threshold, and on every flush.
import { describe, expect, it } from 'vitest';
import { type BatchedDestination, LineBatch } from '../../src/log-batch.js';

/** A destination that records each write and flush. */
function recorder(): BatchedDestination & { readonly events: string[] } {
  const events: string[] = [];
  return {
    events,
    write: (s) => {
      events.push(`write ${s}`);
      return true;
    },
    flush: (cb) => {
      events.push('flush');
      cb?.();
    },
    flushSync: () => {
      events.push('flushSync');
    },
  };
}

describe('LineBatch', () => {
  it('hands lines on joined in order once they reach the threshold, not before', () => {
    const d = recorder();
    const b = new LineBatch(d, 10);
    b.write('abc\n');
    b.write('def\n');
    expect(d.events).toEqual([]);
    b.write('gh\n');
    expect(d.events).toEqual(['write abc\ndef\ngh\n']);
    b.write('i\n');
    expect(d.events).toEqual(['write abc\ndef\ngh\n']);
    b.close();
  });

  it('hands on what it holds before each flush and flushSync, and close flushes', () => {
    const d = recorder();
    const b = new LineBatch(d, 1000);
    b.write('one\n');
    let called = false;
    b.flush(() => {
      called = true;
    });
    expect(called).toBe(true);
    b.flush();
    b.write('two\n');
    b.write('three\n');
    b.flushSync();
    b.write('four\n');
    b.close();
    expect(d.events).toEqual([
      'write one\n',
      'flush',
      'flush',
      'write two\nthree\n',
      'flushSync',
      'write four\n',
      'flushSync',
    ]);
  });
});

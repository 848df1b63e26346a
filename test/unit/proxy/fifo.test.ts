// The relay's FIFO (src/proxy/fifo.ts): order, head, growth and wrap-around across interleaved pushes and shifts.
import { describe, expect, test } from 'vitest';
import { Fifo } from '../../../src/proxy/fifo.js';

describe('Fifo', () => {
  test('items come out in the order they went in; first is the next shift', () => {
    const q = new Fifo<number>();
    expect(q.length).toBe(0);
    expect(q.first).toBeUndefined();
    expect(q.shift()).toBeUndefined();
    q.push(1);
    q.pushAll([2, 3]);
    expect(q.length).toBe(3);
    expect(q.first).toBe(1);
    expect(q.map((x) => x * 10)).toEqual([10, 20, 30]);
    expect(q.some((x) => x === 3)).toBe(true);
    expect(q.shift()).toBe(1);
    expect(q.some((x) => x === 1)).toBe(false);
    expect(q.first).toBe(2);
    q.clear();
    expect(q.length).toBe(0);
    expect(q.shift()).toBeUndefined();
  });

  test('a long queue drained while it grows (a pipeline of 100 000 Bind/Execute) keeps its order across compactions', () => {
    const q = new Fifo<number>();
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 1500; i++) q.push(next++);
      for (let i = 0; i < 1000; i++) expect(q.shift()).toBe(expected++);
      expect(q.first).toBe(expected);
      expect(q.length).toBe(next - expected);
    }
    while (q.length > 0) expect(q.shift()).toBe(expected++);
    expect(expected).toBe(next);
    expect(q.first).toBeUndefined();
  });

  test('a queue that empties and fills again wraps around its ring: at() and first follow the head', () => {
    const q = new Fifo<number>();
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 5; i++) q.push(next++);
      expect(q.at(0)).toBe(expected);
      expect(q.at(4)).toBe(expected + 4);
      expect(q.at(5)).toBeUndefined();
      expect(q.at(-1)).toBeUndefined();
      for (let i = 0; i < 3; i++) expect(q.shift()).toBe(expected++);
      expect(q.map((x) => x)).toEqual([expected, expected + 1]);
      for (let i = 0; i < 2; i++) expect(q.shift()).toBe(expected++);
      expect(q.first).toBeUndefined();
    }
    expect(expected).toBe(next);
  });
});

// Metric families: exposed exactly as prom-client's own Counter and Histogram are, bounded label sets, workers aggregated.
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, test } from 'vitest';
import { CounterFamily, HistogramFamily, OVERFLOW } from '../../../src/ops/metric-families.js';

describe('metric families', () => {
  test('a counter family reads as prom-client’s Counter with the same values', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const f = new CounterFamily({ name: 'x_total', help: 'h', labelNames: ['a', 'b'] as const }).registerWith(
      ours,
    );
    const c = new Counter({ name: 'x_total', help: 'h', labelNames: ['a', 'b'], registers: [theirs] });
    f.cell('1', 'p').n += 3;
    f.cell('2', 'q"\\').n++;
    c.inc({ a: '1', b: 'p' }, 3);
    c.inc({ a: '2', b: 'q"\\' }, 1);
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  test('a histogram family reads as prom-client’s Histogram with the same observations', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const buckets = [0.001, 0.01, 0.1];
    const f = new HistogramFamily({
      name: 'd_seconds',
      help: 'h',
      labelNames: ['db'] as const,
      buckets,
    }).registerWith(ours);
    const h = new Histogram({
      name: 'd_seconds',
      help: 'h',
      labelNames: ['db'],
      buckets,
      registers: [theirs],
    });
    for (const v of [0.0005, 0.001, 0.002, 0.05, 3]) {
      f.cell('demo').observe(v);
      h.observe({ db: 'demo' }, v);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });

  test('past the cap, new label sets count under _other; the cells already made keep counting', async () => {
    const r = new Registry();
    const f = new CounterFamily({
      name: 'c_total',
      help: 'h',
      labelNames: ['col'] as const,
      cap: 2,
    }).registerWith(r);
    f.cell('a').n++;
    f.cell('b').n++;
    f.cell('c').n++;
    f.cell('d').n++;
    f.cell('a').n++;
    const text = await r.metrics();
    expect(text).toContain('c_total{col="a"} 2');
    expect(text).toContain('c_total{col="b"} 1');
    expect(text).toContain(`c_total{col="${OVERFLOW}"} 2`);
    expect(text).not.toContain('col="c"');
  });

  test('sources are read at scrape time and summed with the cells', async () => {
    const r = new Registry();
    const f = new CounterFamily({
      name: 'g',
      help: 'h',
      labelNames: ['state'] as const,
      type: 'gauge',
    }).registerWith(r);
    let n = 1;
    const remove = f.addSource(() => [[['active'], n]] as const);
    f.addSource(() => [[['active'], 10]] as const);
    n = 5;
    expect(await r.metrics()).toContain('g{state="active"} 15');
    remove();
    expect(await r.metrics()).toContain('g{state="active"} 10');
  });

  test('AggregatorRegistry merges two workers’ registries: counters and histograms summed, max where declared', async () => {
    const make = () => {
      const r = new Registry();
      const c = new CounterFamily({ name: 'n_total', help: 'h', labelNames: [] as const }).registerWith(r);
      const e = new CounterFamily({
        name: 'epoch',
        help: 'h',
        labelNames: ['epoch'] as const,
        type: 'gauge',
        aggregator: 'max',
      }).registerWith(r);
      const h = new HistogramFamily({
        name: 't_seconds',
        help: 'h',
        labelNames: [] as const,
        buckets: [1],
      }).registerWith(r);
      return { r, c: c.cell(), e: e.cell('abc'), h: h.cell() };
    };
    const w1 = make();
    const w2 = make();
    w1.c.n = 2;
    w2.c.n = 3;
    w1.e.n = 1;
    w2.e.n = 1;
    w1.h.observe(0.5);
    w2.h.observe(2);
    const merged = AggregatorRegistry.aggregate([
      await w1.r.getMetricsAsJSON(),
      await w2.r.getMetricsAsJSON(),
    ] as never);
    const text = await merged.metrics();
    expect(text).toContain('n_total 5');
    expect(text).toContain('epoch{epoch="abc"} 1');
    expect(text).toContain('t_seconds_bucket{le="1"} 1');
    expect(text).toContain('t_seconds_bucket{le="+Inf"} 2');
    expect(text).toContain('t_seconds_count 2');
  });
});

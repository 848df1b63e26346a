// Metric families with cheap cells for the hot path, exposed to a prom-client Registry at scrape time.
import type { Registry } from 'prom-client';

/** The label value every label set beyond a family's cap is counted under. */
export const OVERFLOW = '_other';

/** One value of a counter or gauge family for one label set; the hot path adds to `n`. */
export interface Cell {
  n: number;
}

/** One exported value, in the shape prom-client's `Registry` and `AggregatorRegistry` read. */
interface Sample {
  readonly labels: Record<string, string | number>;
  readonly value: number;
  readonly metricName?: string;
}

/** What a prom-client Registry reads of a metric (the shape of its own Counter/Histogram `get()`). */
interface MetricJson {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly values: Sample[];
  readonly aggregator: Aggregator;
}

/** How `AggregatorRegistry` (prom-client's cluster mode, `serve --workers N`) merges workers' values. */
export type Aggregator = 'sum' | 'max' | 'min' | 'first' | 'average' | 'omit';

/** Common options of a family: its Prometheus name and help, its label names, its cardinality cap. */
export interface FamilyOptions<L extends readonly string[]> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: L;
  /** Most distinct label sets kept (default 1000); later ones are counted under {@link OVERFLOW} in every label. */
  readonly cap?: number;
  readonly aggregator?: Aggregator;
}

type Values<L extends readonly string[]> = { [K in keyof L]: string };

/**
 * Label sets of one family, looked up through nested Maps (one level per label), so that a hot-path
 * lookup of an existing set allocates nothing. Bounded: past `cap` sets every new one maps to the
 * overflow set (all labels {@link OVERFLOW}).
 */
class LabelTree<T> {
  private readonly root = new Map<string, unknown>();
  readonly entries: { readonly labels: Record<string, string>; readonly value: T }[] = [];
  private overflow: T | undefined;

  constructor(
    private readonly labelNames: readonly string[],
    private readonly cap: number,
    private readonly make: () => T,
  ) {}

  /** The entry for `values` (one per label name, in order), made on first use. */
  get(values: readonly string[]): T {
    let node: Map<string, unknown> = this.root;
    const last = this.labelNames.length - 1;
    if (last < 0) return this.unlabelled();
    for (let i = 0; i < last; i++) {
      const next = node.get(values[i] as string) as Map<string, unknown> | undefined;
      if (next === undefined) return this.add(values);
      node = next;
    }
    const hit = node.get(values[last] as string) as T | undefined;
    return hit === undefined ? this.add(values) : hit;
  }

  private unlabelled(): T {
    if (this.entries.length === 0) this.entries.push({ labels: {}, value: this.make() });
    return (this.entries[0] as { value: T }).value;
  }

  private add(values: readonly string[]): T {
    if (this.entries.length >= this.cap) {
      if (this.overflow === undefined) {
        this.overflow = this.make();
        this.entries.push({
          labels: Object.fromEntries(this.labelNames.map((n) => [n, OVERFLOW])),
          value: this.overflow,
        });
      }
      return this.overflow;
    }
    const value = this.make();
    let node = this.root;
    const last = this.labelNames.length - 1;
    for (let i = 0; i < last; i++) {
      const key = values[i] as string;
      let next = node.get(key) as Map<string, unknown> | undefined;
      if (next === undefined) {
        next = new Map();
        node.set(key, next);
      }
      node = next;
    }
    node.set(values[last] as string, value);
    this.entries.push({
      labels: Object.fromEntries(this.labelNames.map((n, i) => [n, values[i] ?? ''])),
      value,
    });
    return value;
  }

  clear(): void {
    this.root.clear();
    this.entries.length = 0;
    this.overflow = undefined;
  }
}

/** Base of the families: registration with a Registry in prom-client's duck-typed metric shape. */
export abstract class Family {
  readonly name: string;
  readonly help: string;
  readonly aggregator: Aggregator;
  abstract readonly type: 'counter' | 'gauge' | 'histogram';

  constructor(opts: { name: string; help: string; aggregator?: Aggregator }) {
    this.name = opts.name;
    this.help = opts.help;
    this.aggregator = opts.aggregator ?? 'sum';
  }

  protected abstract samples(): Sample[];

  /** What prom-client's Registry reads (`metrics()`, `getMetricsAsJSON()`, cluster aggregation). */
  async get(): Promise<MetricJson> {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      values: this.samples(),
      aggregator: this.aggregator,
    };
  }

  /** Registers the family with `registry` (prom-client accepts any object with this shape, as its AggregatorRegistry does). */
  registerWith(registry: Registry): this {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
    return this;
  }
}

/**
 * A counter (or, with `type: 'gauge'`, a gauge) family: `cell(...labels)` returns the label set's
 * cell once looked up (cache it where the labels are fixed), and the hot path does `cell.n++`.
 * `sources` add values computed at scrape time (cache counters held elsewhere).
 */
export class CounterFamily<L extends readonly string[]> extends Family {
  readonly type: 'counter' | 'gauge';
  private readonly tree: LabelTree<Cell>;
  private readonly sources = new Set<() => Iterable<readonly [Values<L>, number]>>();

  constructor(opts: FamilyOptions<L> & { readonly type?: 'counter' | 'gauge' }) {
    super(opts);
    this.type = opts.type ?? 'counter';
    this.tree = new LabelTree(opts.labelNames, opts.cap ?? 1000, () => ({ n: 0 }));
    this.labelNames = opts.labelNames;
  }

  private readonly labelNames: L;

  /** The cell of one label set (values in `labelNames` order). */
  cell(...values: Values<L>): Cell {
    return this.tree.get(values);
  }

  /**
   * Adds values read at scrape time (summed with the cells of the same labels); returns the
   * function that removes the source again.
   */
  addSource(source: () => Iterable<readonly [Values<L>, number]>): () => void {
    this.sources.add(source);
    return () => this.sources.delete(source);
  }

  /** Forgets every label set (a gauge whose label is the current value: the policy epoch). */
  clear(): void {
    this.tree.clear();
  }

  reset(): void {
    this.tree.clear();
  }

  protected samples(): Sample[] {
    const out = new Map<string, { labels: Record<string, string>; value: number }>();
    for (const e of this.tree.entries)
      out.set(JSON.stringify(e.labels), { labels: e.labels, value: e.value.n });
    for (const source of this.sources) {
      for (const [values, n] of source()) {
        const labels = Object.fromEntries(this.labelNames.map((name, i) => [name, values[i] as string]));
        const key = JSON.stringify(labels);
        const had = out.get(key);
        if (had) had.value += n;
        else out.set(key, { labels, value: n });
      }
    }
    return [...out.values()];
  }
}

/** One label set of a histogram: counts per bucket (not cumulative), the sum and the count. */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: Float64Array) {
    this.counts = new Float64Array(bounds.length);
  }

  /** Records one observation (`value` in the family's unit, seconds for durations); allocates nothing. */
  observe(value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] as number)) i++;
    if (i < b.length) (this.counts as { [k: number]: number })[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

/**
 * A histogram family with fixed upper bounds, exported as prom-client's Histogram is (`_bucket`
 * cumulative with `le`, `+Inf`, `_sum`, `_count`).
 */
export class HistogramFamily<L extends readonly string[]> extends Family {
  readonly type = 'histogram' as const;
  private readonly tree: LabelTree<HistogramCell>;
  private readonly bounds: Float64Array;

  constructor(opts: FamilyOptions<L> & { readonly buckets: readonly number[] }) {
    super(opts);
    this.bounds = Float64Array.from([...opts.buckets].sort((a, b) => a - b));
    this.tree = new LabelTree(opts.labelNames, opts.cap ?? 1000, () => new HistogramCell(this.bounds));
  }

  /** The cell of one label set (values in `labelNames` order). */
  cell(...values: Values<L>): HistogramCell {
    return this.tree.get(values);
  }

  reset(): void {
    this.tree.clear();
  }

  protected samples(): Sample[] {
    const out: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, value: h } of this.tree.entries) {
      let acc = 0;
      h.counts.forEach((c, i) => {
        acc += c;
        out.push({ labels: { le: this.bounds[i] as number, ...labels }, value: acc, metricName: bucket });
      });
      out.push({ labels: { le: '+Inf', ...labels }, value: h.count, metricName: bucket });
      out.push({ labels: { ...labels }, value: h.sum, metricName: `${this.name}_sum` });
      out.push({ labels: { ...labels }, value: h.count, metricName: `${this.name}_count` });
    }
    return out;
  }
}

// A first-in first-out queue whose shift is O(1): the relay's inbox of client messages and its queue of expected replies.

/** Items past which a drained prefix is dropped from the backing array (once it is half of it). */
const COMPACT_AT = 1024;

/**
 * A FIFO of `T`: `push` at the tail, `shift` and `first` at the head, in amortised constant time.
 * An Array's `shift` moves every element left: on a pipeline of 100 000 Bind/Execute pairs the
 * relay's two queues held some 200 000 items each, and draining them took time quadratic in their
 * length (pgwarden's event loop busy for every session: 41 s for 100 000 pairs, 2.5 s for 10 000).
 * Here the head is an index; the drained prefix is cut off once it is at least {@link COMPACT_AT}
 * items and half the array. Never throws.
 */
export class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  /** Items queued. */
  get length(): number {
    return this.items.length - this.head;
  }

  /** The item at the head (the next `shift`), or undefined when empty. */
  get first(): T | undefined {
    return this.items[this.head];
  }

  /** The item `i` places after the head (0: the head), or undefined past the tail. */
  at(i: number): T | undefined {
    return this.items[this.head + i];
  }

  /** Appends `x` at the tail. */
  push(x: T): void {
    this.items.push(x);
  }

  /** Appends every item of `xs` at the tail, in order. */
  pushAll(xs: readonly T[]): void {
    for (const x of xs) this.items.push(x);
  }

  /** Takes the item at the head; undefined when empty. */
  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const x = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head >= COMPACT_AT && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return x;
  }

  /** Empties the queue. */
  clear(): void {
    this.items = [];
    this.head = 0;
  }

  /** True when `pred` holds for some queued item (head first). */
  some(pred: (x: T) => boolean): boolean {
    for (let i = this.head; i < this.items.length; i++) if (pred(this.items[i] as T)) return true;
    return false;
  }

  /** `f` of each queued item, head first. */
  map<U>(f: (x: T) => U): U[] {
    const out: U[] = [];
    for (let i = this.head; i < this.items.length; i++) out.push(f(this.items[i] as T));
    return out;
  }
}

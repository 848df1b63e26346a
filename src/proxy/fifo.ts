// A first-in first-out queue whose shift is O(1): the relay's inbox of client messages and its queue of expected replies.

/** Slots of a new queue's ring (a power of two): pgbench's transaction queues at most 5 items. */
const INITIAL_SLOTS = 8;
/** A ring grown past this many slots goes back to {@link INITIAL_SLOTS} once it is empty (a long pipeline's ring is not kept). */
const SHRINK_ABOVE = 1024;

/**
 * A FIFO of `T`: `push` at the tail, `shift` and `first` at the head, in constant time (amortised
 * for `push`, which doubles the ring when it is full). An Array's `shift` moves every element left:
 * on a pipeline of 100 000 Bind/Execute pairs the relay's two queues held some 200 000 items each,
 * and draining them took time quadratic in their length (pgwarden's event loop busy for every
 * session: 41 s for 100 000 pairs, 2.5 s for 10 000). Here the items live in a ring whose slots are
 * reused: a queue that empties and fills again each transaction allocates nothing (issue 18: it
 * made a new array every time it emptied). A shifted slot is cleared (no item is kept alive by
 * the queue), and a ring grown past 1024 slots is dropped once empty. Never throws.
 */
export class Fifo<T> {
  private slots: (T | undefined)[] = new Array<T | undefined>(INITIAL_SLOTS).fill(undefined);
  /** slots.length - 1 (the length is a power of two). */
  private mask = INITIAL_SLOTS - 1;
  private head = 0;
  private size = 0;

  /** Items queued. */
  get length(): number {
    return this.size;
  }

  /** The item at the head (the next `shift`), or undefined when empty. */
  get first(): T | undefined {
    return this.size === 0 ? undefined : this.slots[this.head];
  }

  /** The item `i` places after the head (0: the head), or undefined past the tail. */
  at(i: number): T | undefined {
    return i >= 0 && i < this.size ? this.slots[(this.head + i) & this.mask] : undefined;
  }

  /** Queues `x` at the tail. */
  push(x: T): void {
    if (this.size === this.slots.length) this.grow();
    this.slots[(this.head + this.size) & this.mask] = x;
    this.size++;
  }

  /** Queues each of `xs` at the tail, in order. */
  pushAll(xs: readonly T[]): void {
    for (const x of xs) this.push(x);
  }

  /** Takes the item at the head, or undefined when empty. */
  shift(): T | undefined {
    if (this.size === 0) return undefined;
    const x = this.slots[this.head];
    this.slots[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.size--;
    if (this.size === 0) {
      this.head = 0;
      if (this.slots.length > SHRINK_ABOVE) this.reset();
    }
    return x;
  }

  /** Drops every item. */
  clear(): void {
    if (this.slots.length > SHRINK_ABOVE) this.reset();
    else for (let i = 0; i < this.size; i++) this.slots[(this.head + i) & this.mask] = undefined;
    this.head = 0;
    this.size = 0;
  }

  private reset(): void {
    this.slots = new Array<T | undefined>(INITIAL_SLOTS).fill(undefined);
    this.mask = INITIAL_SLOTS - 1;
  }

  /** Whether `pred` holds for an item, head first. */
  some(pred: (x: T) => boolean): boolean {
    for (let i = 0; i < this.size; i++) if (pred(this.slots[(this.head + i) & this.mask] as T)) return true;
    return false;
  }

  /** The items mapped by `f`, head first. */
  map<U>(f: (x: T) => U): U[] {
    const out: U[] = [];
    for (let i = 0; i < this.size; i++) out.push(f(this.slots[(this.head + i) & this.mask] as T));
    return out;
  }

  /** Doubles the ring, the items moved to its start in order. */
  private grow(): void {
    const next = new Array<T | undefined>(this.slots.length * 2).fill(undefined);
    for (let i = 0; i < this.size; i++) next[i] = this.slots[(this.head + i) & this.mask];
    this.slots = next;
    this.mask = next.length - 1;
    this.head = 0;
  }
}

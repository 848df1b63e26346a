// Prepared statements counted against the memory budget: what a session keeps between messages, taken when kept, given back when closed.
import type { MemoryBudget } from './memory-budget.js';

/**
 * The part of the memory budget one session's prepared statements may keep: a client cannot keep
 * all of what the budget leaves prepared statements (memory-budget.ts RETAINED_SHARE) to itself.
 */
export const SESSION_RETAINED_SHARE = 1 / 4;

/** What a kept statement costs besides its texts (bytes): the map entry, its plan and analysis of a short text. */
export const RETAINED_ENTRY_BYTES = 2048;

/**
 * The bytes a statement kept with these texts is counted for: two a UTF-16 code unit of each
 * distinct text (V8 holds one or two bytes a code unit; the rest stands for an analysis that grows
 * with the text) plus {@link RETAINED_ENTRY_BYTES}. Input: the caller's text and the text prepared
 * upstream (the same string when nothing was rewritten).
 */
export function retainedCost(sql: string, sent: string = sql): number {
  return retainedBytes(sql.length + (sent === sql ? 0 : sent.length));
}

/** {@link retainedCost} of texts of `units` UTF-16 code units in all. */
export function retainedBytes(units: number): number {
  return 2 * units + RETAINED_ENTRY_BYTES;
}

/**
 * One session's prepared statements (protocol-level Parse and SQL-level PREPARE) as the memory
 * budget sees them (issue 16 item 2): each kept statement counts against the session's share
 * ({@link SESSION_RETAINED_SHARE}) and the budget from the moment it is kept until Close,
 * DEALLOCATE, DISCARD ALL or the session's end ({@link close}). Without a budget nothing is counted.
 */
export class RetainedStatements {
  private bytes = 0;
  private closed = false;

  constructor(private readonly budget: MemoryBudget | undefined) {}

  /** Bytes this session keeps now. */
  get held(): number {
    return this.bytes;
  }

  /**
   * Whether `more` bytes more may be kept now (true when `more` ≤ 0: a statement replaced by a
   * smaller one). False means: refuse the statement with 53200, keep nothing.
   */
  admits(more: number): boolean {
    const b = this.budget;
    if (!b || more <= 0 || this.closed) return true;
    return this.bytes + more <= b.limit * SESSION_RETAINED_SHARE && b.canRetain(more);
  }

  /**
   * The refusal of a statement whose keeping {@link admits} refused: 53200 out_of_memory, as
   * Postgres answers an allocation it cannot make, that statement only. Input: the statement as
   * the client named it, and its length in characters.
   */
  refusal(what: string, length: number): { sqlstate: string; message: string; detail: string; hint: string } {
    const limit = this.budget?.limit ?? 0;
    return {
      sqlstate: '53200',
      message: 'out of memory',
      detail: `${what} (${length} characters) does not fit in what pgwarden keeps for prepared statements: this session keeps ${this.bytes} bytes of at most ${Math.floor(limit * SESSION_RETAINED_SHARE)}, all sessions ${this.budget?.retained ?? 0} of at most ${Math.floor(limit / 2)} (limits.memory_budget_bytes ${limit})`,
      hint: 'Close or DEALLOCATE prepared statements the session no longer needs.',
    };
  }

  /** A map whose entries are counted for `cost(value)` while they are in it. */
  map<V>(cost: (v: V) => number): RetainedMap<V> {
    return new RetainedMap(this, cost);
  }

  /** Counts `n` bytes kept (an entry set). */
  take(n: number): void {
    if (this.closed || n <= 0) return;
    this.bytes += n;
    this.budget?.retain(n);
  }

  /** Gives back `n` bytes (an entry deleted or replaced). */
  give(n: number): void {
    if (this.closed || n <= 0) return;
    this.bytes -= n;
    this.budget?.unretain(n);
  }

  /** The session ended: everything it kept is given back; the maps count nothing from now on. */
  close(): void {
    if (this.closed) return;
    this.budget?.unretain(this.bytes);
    this.bytes = 0;
    this.closed = true;
  }
}

/**
 * A Map of kept statements by name whose every change (set, replace, delete, clear; MapUndo's
 * restores included) moves the session's count. Admission is the caller's ({@link growth},
 * RetainedStatements.admits) before it sets: a set itself never fails.
 */
export class RetainedMap<V> extends Map<string, V> {
  constructor(
    private readonly ledger: RetainedStatements,
    private readonly cost: (v: V) => number,
  ) {
    super();
  }

  /** Bytes more that setting `key` to `value` would keep (negative when it keeps less). */
  growth(key: string, value: V): number {
    const old = super.get(key);
    return this.cost(value) - (old === undefined ? 0 : this.cost(old));
  }

  override set(key: string, value: V): this {
    const old = super.get(key);
    if (old !== undefined) this.ledger.give(this.cost(old));
    super.set(key, value);
    this.ledger.take(this.cost(value));
    return this;
  }

  override delete(key: string): boolean {
    const old = super.get(key);
    if (old === undefined) return false;
    this.ledger.give(this.cost(old));
    return super.delete(key);
  }

  override clear(): void {
    for (const v of super.values()) this.ledger.give(this.cost(v));
    super.clear();
  }
}

// Log lines gathered in memory and handed to their destination a batch at a time: one string per ~8 KiB, not one per line.

/** The destination a {@link LineBatch} hands its lines to: a SonicBoom (pino.destination). */
export interface BatchedDestination {
  write(s: string): boolean;
  flush(cb?: (err?: Error) => void): void;
  flushSync(): void;
}

/** Batches not yet closed: what they hold is handed on at the process's exit (as SonicBoom flushes its own). */
const open = new Set<LineBatch>();
let exitHook = false;

/**
 * A pino destination (`write`, `flush`, `flushSync`) in front of a SonicBoom: lines are kept in
 * order in an array and handed to it joined, once they add up to `minUnits` UTF-16 code units
 * (default 8192), on `flush()` (makeAuditLogger's timer) and `flushSync()` (close), and at exit.
 * SonicBoom measures the UTF-8 length of its pending buffer at every write: an audit line per
 * statement handed to it singly cost ~5 µs, a few KiB re-measured each time (issue 18); here it is
 * a push. Every writer of the logger goes through it, so lines keep their order.
 */
export class LineBatch {
  private parts: string[] = [];
  private units = 0;

  constructor(
    private readonly dest: BatchedDestination,
    private readonly minUnits = 8192,
  ) {
    open.add(this);
    if (!exitHook) {
      exitHook = true;
      process.once('exit', () => {
        for (const b of open) {
          try {
            b.flushSync();
          } catch {
            // A destination already destroyed or never opened: nothing more can be written to it.
          }
        }
      });
    }
  }

  /** Keeps `s` (one or more whole lines); hands the batch on once it is `minUnits` long. Always true. */
  write(s: string): boolean {
    this.parts.push(s);
    this.units += s.length;
    if (this.units >= this.minUnits) this.handOn();
    return true;
  }

  /** Hands the batch on and flushes the destination (asynchronously; `cb` as SonicBoom calls it). */
  flush(cb?: (err?: Error) => void): void {
    this.handOn();
    this.dest.flush(cb);
  }

  /** Hands the batch on and writes everything out now. */
  flushSync(): void {
    this.handOn();
    this.dest.flushSync();
  }

  /** Flushes what is held and stops handing on at exit (the destination's own end is the caller's). */
  close(): void {
    this.flushSync();
    open.delete(this);
  }

  private handOn(): void {
    const parts = this.parts;
    if (parts.length === 0) return;
    this.parts = [];
    this.units = 0;
    this.dest.write(parts.length === 1 ? (parts[0] as string) : parts.join(''));
  }
}

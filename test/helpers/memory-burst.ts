// Drives N clients each sending one huge statement through a `pgwarden serve` child and samples the child's RSS.
import fs from 'node:fs';
import pg from 'pg';

/** The resident set size of process `pid` in bytes (VmRSS of /proc/<pid>/status), 0 when it is gone. */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Samples `rssOf(pid)` every `everyMs` until stopped; `stop()` returns the highest value seen. */
export function sampleRss(pid: number, everyMs = 50): { stop(): number } {
  let max = rssOf(pid);
  const t = setInterval(() => {
    max = Math.max(max, rssOf(pid));
  }, everyMs);
  return {
    stop() {
      clearInterval(t);
      return Math.max(max, rssOf(pid));
    },
  };
}

/** One client's outcome: its result or its error's SQLSTATE and message, and the wall time in ms. */
export interface BurstOutcome {
  readonly ok: boolean;
  readonly code?: string;
  readonly message?: string;
  readonly ms: number;
}

/**
 * A Simple Query of about `bytes` bytes whose only big part is one standard string literal in a
 * comparison (`SELECT '<a…a>' = 'x' AS same`): it answers one row, `same = false`. With `from`
 * (a FROM list, `users LIMIT 1`), the comparison is made once per row of it: a relation with
 * columns hidden from the caller makes it a masked statement (rewritten with a masking subquery).
 */
export function hugeStatement(bytes: number, from?: string): string {
  return `SELECT '${'a'.repeat(bytes)}' = 'x' AS same${from ? ` FROM ${from}` : ''}`;
}

/**
 * Opens `clients` connections to `url` (all logged in first), then sends `sql` on each at once and
 * waits for every answer. Output: one outcome per client, in order.
 */
export async function burst(url: string, clients: number, sql: string): Promise<BurstOutcome[]> {
  const cs: pg.Client[] = [];
  try {
    for (let i = 0; i < clients; i++) {
      const c = new pg.Client({ connectionString: url });
      c.on('error', () => {});
      await c.connect();
      cs.push(c);
    }
    return await Promise.all(
      cs.map(async (c): Promise<BurstOutcome> => {
        const t = performance.now();
        try {
          const r = await c.query<{ same: boolean }>(sql);
          return { ok: r.rows[0]?.same === false, ms: performance.now() - t };
        } catch (e) {
          const err = e as { code?: string; message?: string };
          return {
            ok: false,
            ...(err.code !== undefined ? { code: err.code } : {}),
            ...(err.message !== undefined ? { message: err.message } : {}),
            ms: performance.now() - t,
          };
        }
      }),
    );
  } finally {
    await Promise.all(cs.map((c) => c.end().catch(() => {})));
  }
}

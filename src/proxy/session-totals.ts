// SHOW STATS totals: session counters summed per database.
import type { SessionCounters } from './console-port.js';

/**
 * Adds the counters `c` of one session (transactions, queries, refused, query time in µs, bytes
 * received and sent) to `to`'s entry for `database`, which is created when absent. Throws nothing.
 */
export function addCounters(to: Map<string, SessionCounters>, database: string, c: SessionCounters): void {
  const t = to.get(database);
  to.set(
    database,
    t
      ? {
          transactions: t.transactions + c.transactions,
          queries: t.queries + c.queries,
          refused: t.refused + c.refused,
          queryTimeUs: t.queryTimeUs + c.queryTimeUs,
          received: t.received + c.received,
          sent: t.sent + c.sent,
        }
      : c,
  );
}

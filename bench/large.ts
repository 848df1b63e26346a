// The large-result section: SELECT * FROM bench_wide (100k rows) through each target, wall time and proxy CPU per row.
import fs from 'node:fs';
import path from 'node:path';
import { type Endpoint, pgbench } from './pgbench.js';
import { cpuNs } from './procs.js';
import type { LargeRow } from './report.js';
import { spread } from './stats.js';

/** A target of the section: where pgbench connects and, for a proxy, its process id (CPU). */
export interface LargeTarget {
  readonly name: string;
  readonly endpoint: Endpoint;
  readonly pid?: number;
}

/**
 * Runs `perQuery` queries of the whole table per target per round, targets rotated each round
 * (pgbench -f, -M extended, -c 1). `targets[0]` is the base of `vsDirect`. `rows` is the table's
 * row count (CPU per row). The script goes into `workDir`.
 */
export async function benchLarge(opts: {
  readonly pgbenchBin: string;
  readonly targets: readonly LargeTarget[];
  readonly rounds: number;
  readonly perQuery: number;
  readonly rows: number;
  readonly workDir: string;
}): Promise<LargeRow[]> {
  const script = path.join(opts.workDir, 'wide.sql');
  fs.writeFileSync(script, 'SELECT * FROM bench_wide;\n');
  const { targets } = opts;
  const large = new Map<string, { ms: number[]; cpu: number[] }>();
  for (let round = 0; round < opts.rounds; round++) {
    const order = targets.map((_, i) => targets[(i + round) % targets.length] as LargeTarget);
    for (const t of order) {
      const cpu0 = t.pid ? cpuNs(t.pid) : 0;
      const r = await pgbench({
        bin: opts.pgbenchBin,
        endpoint: t.endpoint,
        mode: 'extended',
        clients: 1,
        threads: 1,
        length: { transactions: opts.perQuery },
        script,
      });
      const cpu = t.pid ? (cpuNs(t.pid) - cpu0) / (r.transactions * opts.rows) : Number.NaN;
      const s = large.get(t.name) ?? { ms: [], cpu: [] };
      s.ms.push(r.latencyMeanMs);
      s.cpu.push(cpu);
      large.set(t.name, s);
    }
  }
  const baseMs = large.get(targets[0]?.name ?? '')?.ms ?? [];
  return targets.map((t) => {
    const s = large.get(t.name) ?? { ms: [], cpu: [] };
    return {
      target: t.name,
      wallMs: spread(s.ms),
      msPerRound: s.ms,
      vsDirect: spread(s.ms.map((x, i) => x / (baseMs[i] as number))).median,
      cpuNsPerRow: t.pid ? spread(s.cpu).median : undefined,
    };
  });
}

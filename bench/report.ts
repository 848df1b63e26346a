// The benchmark's result types and their markdown rendering: machine, tables per section, goals as ratios.
import type { AnalysisResults } from './analysis.js';
import type { ConnectionResults } from './connections.js';
import { type Spread, spread } from './stats.js';
import { renderSyscalls, type SyscallRow } from './syscalls.js';

/** One pgbench configuration on one target, over the rounds. */
export interface PgbenchRow {
  readonly clients: number;
  readonly threads: number;
  readonly mode: string;
  readonly target: string;
  readonly tps: Spread;
  /** Medians over the rounds. */
  readonly latencyMeanMs: number;
  readonly latencyP99Ms: number;
  /** Median over the rounds of the proxy process's CPU per transaction, µs (NaN for direct). */
  readonly cpuUsPerTxn: number;
  /** Median over the rounds of this round's CPU per transaction / the pipe's (proxies only). */
  readonly cpuVsPipe?: number | undefined;
  /** Median over the rounds of this round's TPS / the base's TPS in the same round. */
  readonly vsDirect: number | undefined;
  readonly vsPipe: number | undefined;
  readonly vsBouncer: number | undefined;
}

/**
 * Analysis-cache counters of the pgwarden process, summed over its pgbench runs in one mode, and
 * the gate memos' hits (a session's memo serves a statement decided before without parsing it or
 * looking it up in the cache: gate-memo.ts).
 */
export interface CacheRow {
  readonly mode: string;
  readonly hits: number;
  readonly normalizedHits: number;
  readonly misses: number;
  readonly memoHits: number;
}

/** One target of the large-result test. */
export interface LargeRow {
  readonly target: string;
  readonly wallMs: Spread;
  readonly vsDirect: number;
  /** Wall ms per query in each round, in round order (per-round ratios between targets). */
  readonly msPerRound: readonly number[];
  /** Median over the rounds of the proxy process's CPU (user + system) per row, ns. */
  readonly cpuNsPerRow: number | undefined;
}

/** Everything one run measured (bench/results.json). */
export interface Results {
  readonly machine: {
    readonly date: string;
    readonly cores: number;
    readonly cpu: string;
    readonly memoryGb: number;
    readonly node: string;
    readonly postgres: string;
    readonly pgbench: string;
    readonly pgbouncer: string;
    readonly loadAverageStart: number;
    readonly loadAverageEnd: number;
  };
  readonly run: {
    readonly quick: boolean;
    readonly rounds: number;
    readonly pgbenchLength: string;
    readonly largeQueriesPerRound: number;
    seconds: number;
  };
  readonly notices: readonly string[];
  readonly pgbench: readonly PgbenchRow[];
  readonly cache: readonly CacheRow[];
  readonly large: readonly LargeRow[];
  readonly syscalls: readonly SyscallRow[];
  /** Absent when the section was not run (`--only`). */
  readonly analysis: AnalysisResults | undefined;
  readonly connections: ConnectionResults | undefined;
}

const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '–');
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');
const ratio = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : `${x.toFixed(2)}×`);
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(2)}%` : '–');

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** A goal: what, the target, the measured value, met or not. */
interface Goal {
  readonly what: string;
  readonly target: string;
  readonly value: string;
  readonly met: boolean | undefined;
}

/** Issue 18's goals, then the standing ones of earlier issues (17: managed vs single; 14: the caches). */
function goals(r: Results): Goal[] {
  const out: Goal[] = [];
  const row = (c: number, mode: string, target: string) =>
    r.pgbench.find((x) => x.clients === c && x.mode === mode && x.target === target);
  const atMost = (what: string, x: number | undefined, max: number, unit = '×') =>
    out.push({
      what,
      target: `≤ ${max}${unit === '×' ? '×' : ` ${unit}`}`,
      value: x === undefined || !Number.isFinite(x) ? '–' : unit === '×' ? ratio(x) : `${f1(x)} ${unit}`,
      met: x === undefined || !Number.isFinite(x) ? undefined : x <= max,
    });
  const atLeast = (what: string, x: number | undefined, min: number) =>
    out.push({
      what,
      target: `≥ ${min}×`,
      value: ratio(x),
      met: x === undefined || !Number.isFinite(x) ? undefined : x >= min,
    });
  for (const who of ['pgwarden dba', 'pgwarden masked']) {
    for (const c of [1, 8]) {
      for (const mode of ['simple', 'extended', 'prepared']) {
        const x = row(c, mode, who);
        atMost(`-c ${c} ${mode}, ${who}: proxy CPU per transaction / pipe's`, x?.cpuVsPipe, 1.3);
        atLeast(`-c ${c} ${mode}, ${who}: TPS / pipe`, x?.vsPipe, 0.85);
        atLeast(`-c ${c} ${mode}, ${who}: TPS / PgBouncer`, x?.vsBouncer, 0.8);
      }
    }
  }
  const large = (t: string) => r.large.find((x) => x.target === t);
  const un = large('pgwarden unmasked');
  const ma = large('pgwarden masked');
  const maskedVsUnmasked =
    un && ma ? spread(ma.msPerRound.map((x, i) => x / (un.msPerRound[i] as number))).median : undefined;
  atMost('100k rows masked: wall / unmasked (pgwarden)', maskedVsUnmasked, 1.1);
  const a = r.analysis;
  if (a) atMost(`cold analysis, ${a.coldLong.chars}-char CTE, median`, a.coldLong.medianUs, 150, 'µs');
  const c = r.connections;
  if (c) {
    atMost('SCRAM login (client and upstream): proxy CPU', c.cpuMsPerLogin, 6, 'ms');
    atMost(`RSS per idle connection (${c.clients} clients)`, c.kbPerConnection, 100, 'KB');
  }
  // Issue 17: a login per role set adds no per-statement work (managed vs single, same user).
  for (const n of [1, 8]) {
    for (const mode of ['simple', 'extended', 'prepared']) {
      const single = row(n, mode, 'pgwarden masked')?.tps.median;
      const managed = row(n, mode, 'pgwarden managed')?.tps.median;
      atLeast(
        `-c ${n} ${mode}, roles: managed / single (masked user): TPS`,
        single && managed ? managed / single : undefined,
        0.95,
      );
    }
  }
  if (a) atMost('cached decision p99 (corpus)', a.cachedDecision.p99Us, 5, 'µs');
  // A memo hit is a statement that needed neither parse nor lookup: it counts as an exact hit.
  const total = r.cache.reduce(
    (s, x) => ({
      hits: s.hits + x.hits + x.memoHits,
      norm: s.norm + x.normalizedHits,
      all: s.all + lookups(x),
    }),
    { hits: 0, norm: 0, all: 0 },
  );
  if (total.all > 0) {
    const hitRate = (total.hits + total.norm) / total.all;
    out.push({
      what: 'analysis cache hit rate during pgbench (exact + normalized)',
      target: '≥ 99.9%',
      value: pct(hitRate),
      met: hitRate >= 0.999,
    });
    const parseFree = total.hits / total.all;
    out.push({
      what: 'hits that skip the parse (exact text) during pgbench',
      target: '≥ 99.9%',
      value: pct(parseFree),
      met: parseFree >= 0.999,
    });
  }
  return out;
}

/** Statements gated in a mode: the memo's hits plus the analysis cache's lookups (the memo's misses). */
function lookups(c: CacheRow): number {
  return c.memoHits + c.hits + c.normalizedHits + c.misses;
}

/** The whole report as markdown: machine first, then each section, then the goals. */
export function renderMarkdown(r: Results): string {
  const m = r.machine;
  const parts: string[] = [];
  parts.push(`# pgwarden benchmark${r.run.quick ? ' (quick)' : ''}`);
  parts.push(
    [
      `- date: ${m.date}; run took ${r.run.seconds} s`,
      `- machine: ${m.cores} cores, ${m.cpu}, ${m.memoryGb} GB; load average ${f2(m.loadAverageStart)} at start, ${f2(m.loadAverageEnd)} at end`,
      `- Node ${m.node}; PostgreSQL ${m.postgres} (embedded); ${m.pgbench}; ${m.pgbouncer.split('\n')[0]}`,
      `- ${r.run.rounds} rounds, targets interleaved and rotated each round; pgbench ${r.run.pgbenchLength}; medians (min–max over rounds); ratios are the median of per-round ratios`,
      ...r.notices.map((n) => `- NOTICE: ${n}`),
    ].join('\n'),
  );

  if (r.pgbench.length > 0) parts.push('## pgbench -S (select-only, scale 1)');
  if (r.pgbench.length > 0)
    parts.push(
      table(
        [
          'clients',
          'mode',
          'target',
          'TPS median (min–max)',
          'mean ms',
          'p99 ms',
          'proxy CPU µs/txn',
          'CPU /pipe',
          '/direct',
          '/pipe',
          '/PgBouncer',
        ],
        r.pgbench.map((x) => [
          `-c ${x.clients} -j ${x.threads}`,
          x.mode,
          x.target,
          `${f0(x.tps.median)} (${f0(x.tps.min)}–${f0(x.tps.max)})`,
          f3(x.latencyMeanMs),
          f3(x.latencyP99Ms),
          f1(x.cpuUsPerTxn),
          ratio(x.cpuVsPipe),
          ratio(x.vsDirect),
          ratio(x.vsPipe),
          ratio(x.vsBouncer),
        ]),
      ),
    );

  if (r.syscalls.length > 0) {
    parts.push('## System calls per transaction (strace -c -f on the target process, pgbench -S -c 1 -t)');
    parts.push(renderSyscalls(r.syscalls));
  }

  if (r.cache.some((c) => lookups(c) > 0))
    parts.push('## Analysis cache during the pgbench runs (pgwarden process)');
  if (r.cache.some((c) => lookups(c) > 0))
    parts.push(
      table(
        [
          'mode',
          'statements gated',
          'session memo hits (no parse, no lookup)',
          'exact hits (no parse)',
          'normalized hits (parse, no analysis)',
          'misses',
          'hit rate',
        ],
        r.cache.map((c) => {
          const all = lookups(c);
          return [
            c.mode,
            String(all),
            `${c.memoHits} (${pct(c.memoHits / all)})`,
            `${c.hits} (${pct(c.hits / all)})`,
            `${c.normalizedHits} (${pct(c.normalizedHits / all)})`,
            String(c.misses),
            pct((c.memoHits + c.hits + c.normalizedHits) / all),
          ];
        }),
      ),
    );

  if (r.large.length > 0)
    parts.push(`## Large results: SELECT * FROM bench_wide (100k rows × 5 columns), -M extended`);
  if (r.large.length > 0)
    parts.push(
      table(
        ['target', 'wall ms/query median (min–max)', '/direct', 'proxy CPU ns/row'],
        r.large.map((x) => [
          x.target,
          `${f1(x.wallMs.median)} (${f1(x.wallMs.min)}–${f1(x.wallMs.max)})`,
          ratio(x.vsDirect),
          x.cpuNsPerRow === undefined ? '–' : f0(x.cpuNsPerRow),
        ]),
      ),
    );

  const a = r.analysis;
  if (a) parts.push(`## Analysis (${a.statements} corpus statements, demo catalog fixture, in process)`);
  if (a)
    parts.push(
      table(
        ['measure', 'median µs', 'p99 µs', 'samples'],
        [
          [
            'cold analyze(): parse + analysis, whole corpus',
            f2(a.coldCorpus.medianUs),
            f2(a.coldCorpus.p99Us),
            String(a.coldCorpus.samples),
          ],
          [
            `cold analyze(): the ${a.coldLong.chars}-char CTE with joins`,
            f2(a.coldLong.medianUs),
            f2(a.coldLong.p99Us),
            String(a.coldLong.samples),
          ],
          [
            'cached decision: analysis-cache exact hit + decision-cache hit, whole corpus',
            f2(a.cachedDecision.medianUs),
            f2(a.cachedDecision.p99Us),
            String(a.cachedDecision.samples),
          ],
          [
            'normalized hit: same statement, new literal (parse + normalize + decision hit)',
            f2(a.normalizedHit.medianUs),
            f2(a.normalizedHit.p99Us),
            String(a.normalizedHit.samples),
          ],
          [
            'parse alone: pgbench -S statement',
            f2(a.parsePgbench.medianUs),
            f2(a.parsePgbench.p99Us),
            String(a.parsePgbench.samples),
          ],
        ],
      ),
    );

  const c = r.connections;
  if (c)
    parts.push(`## Connections: ${c.clients} idle authenticated clients (SCRAM, one upstream session each)`);
  if (c)
    parts.push(
      table(
        [
          'accept all (s)',
          'connect median (ms)',
          'in flight',
          'RSS before (MB)',
          'RSS with clients (MB)',
          'KB per connection',
          'proxy CPU ms per login',
        ],
        [
          [
            f2(c.acceptSeconds),
            f2(c.connectMedianMs),
            String(c.concurrency),
            f1(c.rssBaseKb / 1024),
            f1(c.rssLoadedKb / 1024),
            f1(c.kbPerConnection),
            f2(c.cpuMsPerLogin),
          ],
        ],
      ),
    );

  parts.push('## Goals (ratios from this run)');
  parts.push(
    table(
      ['goal', 'target', 'measured', 'met'],
      goals(r).map((g) => [
        g.what,
        g.target,
        g.value,
        g.met === undefined ? 'n/a' : g.met ? 'yes' : '**no**',
      ]),
    ),
  );
  return parts.join('\n\n');
}

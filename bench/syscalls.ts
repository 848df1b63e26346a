// System calls per transaction of a target process (strace -c -f attached over a fixed pgbench -t), grouped and rendered.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { type Endpoint, pgbench } from './pgbench.js';

/** System calls per transaction of one target in one pgbench mode (means over the run). */
export interface SyscallRow {
  readonly target: string;
  readonly mode: string;
  readonly clients: number;
  readonly transactions: number;
  /** Every call, then the groups of {@link GROUPS}, per transaction. */
  readonly total: number;
  readonly reads: number;
  readonly writes: number;
  readonly epoll: number;
  readonly futex: number;
  readonly other: number;
  /** The most frequent calls, per transaction, most first. */
  readonly top: readonly (readonly [string, number])[];
}

/** Which call belongs to which column of the table (Linux x86-64 names as strace prints them). */
const GROUPS: Readonly<Record<string, 'reads' | 'writes' | 'epoll' | 'futex'>> = {
  read: 'reads',
  readv: 'reads',
  recvfrom: 'reads',
  recvmsg: 'reads',
  pread64: 'reads',
  write: 'writes',
  writev: 'writes',
  sendto: 'writes',
  sendmsg: 'writes',
  pwrite64: 'writes',
  epoll_wait: 'epoll',
  epoll_pwait: 'epoll',
  epoll_pwait2: 'epoll',
  epoll_ctl: 'epoll',
  poll: 'epoll',
  ppoll: 'epoll',
  futex: 'futex',
};

/**
 * Parses strace's `-c` summary table (`% time seconds usecs/call calls errors syscall`) into
 * calls per system call name; the `total` line is left out.
 */
export function parseStraceSummary(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const cells = line.trim().split(/\s+/);
    const name = cells[cells.length - 1];
    // Rows: % time, seconds, usecs/call, calls, [errors], syscall.
    if (cells.length < 5 || name === undefined || name === 'total' || name === 'syscall') continue;
    if (!/^\d+\.\d+$/.test(cells[0] ?? '')) continue;
    const calls = Number(cells[3]);
    if (Number.isFinite(calls)) out.set(name, (out.get(name) ?? 0) + calls);
  }
  return out;
}

/**
 * Runs `body` with `strace -c -f` attached to every thread of process `pid` and returns the calls
 * it made meanwhile, by name. `straceBin` is the strace executable; `workDir` receives its output.
 * Throws when strace cannot attach (no ptrace permission).
 */
export async function traced(
  straceBin: string,
  pid: number,
  workDir: string,
  body: () => Promise<void>,
): Promise<Map<string, number>> {
  const out = path.join(workDir, `strace-${pid}-${Date.now()}.txt`);
  const st = spawn(straceBin, ['-c', '-f', '-p', String(pid), '-o', out], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => st.once('exit', (code) => resolve(code)));
  let err = '';
  await new Promise<void>((resolve, reject) => {
    st.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      if (/attached/.test(err)) resolve();
    });
    void exited.then(() => reject(new Error(`strace -p ${pid} failed: ${err.trim()}`)));
  });
  // strace attaches the other threads right after the first line.
  await new Promise((r) => setTimeout(r, 300));
  try {
    await body();
  } finally {
    st.kill('SIGINT');
    await exited;
  }
  const text = fs.readFileSync(out, 'utf8');
  fs.rmSync(out, { force: true });
  return parseStraceSummary(text);
}

/** A row of the table from one traced run of `transactions` transactions. */
export function syscallRow(
  target: string,
  mode: string,
  clients: number,
  transactions: number,
  calls: ReadonlyMap<string, number>,
): SyscallRow {
  const per = (n: number) => n / transactions;
  const g = { reads: 0, writes: 0, epoll: 0, futex: 0, other: 0 };
  let total = 0;
  for (const [name, n] of calls) {
    total += n;
    g[GROUPS[name] ?? 'other'] += n;
  }
  return {
    target,
    mode,
    clients,
    transactions,
    total: per(total),
    reads: per(g.reads),
    writes: per(g.writes),
    epoll: per(g.epoll),
    futex: per(g.futex),
    other: per(g.other),
    top: [...calls]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, n]) => [k, per(n)] as const),
  };
}

/** The markdown table of the section. */
export function renderSyscalls(rows: readonly SyscallRow[]): string {
  const f = (x: number) => x.toFixed(2);
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  const head = [
    'clients',
    'mode',
    'target',
    'all',
    'reads',
    'writes',
    'epoll',
    'futex',
    'other',
    'most frequent',
  ];
  return [
    line(head),
    line(head.map(() => '---')),
    ...rows.map((r) =>
      line([
        `-c ${r.clients}`,
        r.mode,
        r.target,
        f(r.total),
        f(r.reads),
        f(r.writes),
        f(r.epoll),
        f(r.futex),
        f(r.other),
        r.top.map(([k, n]) => `${k} ${f(n)}`).join(', '),
      ]),
    ),
  ].join('\n');
}

/** A traced target: its name, where pgbench connects, and the process to attach to. */
export interface TracedTarget {
  readonly name: string;
  readonly endpoint: Endpoint;
  readonly pid: number;
}

/**
 * The section: for each mode and target, one pgbench -S run of `transactions` transactions at
 * `-c 1` with strace attached to the target's process (its log in `logDir` unused). Runs are
 * slowed by strace: only the counts are read from them, never the times.
 */
export async function benchSyscalls(opts: {
  readonly straceBin: string;
  readonly pgbenchBin: string;
  readonly targets: readonly TracedTarget[];
  readonly modes: readonly ('simple' | 'extended' | 'prepared')[];
  readonly transactions: number;
  readonly workDir: string;
}): Promise<SyscallRow[]> {
  const rows: SyscallRow[] = [];
  for (const mode of opts.modes) {
    for (const t of opts.targets) {
      let done = 0;
      const calls = await traced(opts.straceBin, t.pid, opts.workDir, async () => {
        const r = await pgbench({
          bin: opts.pgbenchBin,
          endpoint: t.endpoint,
          mode,
          clients: 1,
          threads: 1,
          length: { transactions: opts.transactions },
        });
        done = r.transactions;
      });
      rows.push(syscallRow(t.name, mode, 1, done, calls));
    }
  }
  return rows;
}

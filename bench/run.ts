// `npm run bench [-- --quick] [--profile]`: pgwarden side by side with PostgreSQL, a bare pipe and PgBouncer.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE } from '../src/embedded/demo.js';
import { freePort } from '../src/embedded/postgres.js';
import type { AnalysisCacheStats } from '../src/sql/analysis-cache.js';
import { benchAnalysis } from './analysis.js';
import { benchConnections, type ConnectionResults } from './connections.js';
import { benchLarge } from './large.js';
import { benchMcp, type McpResults, renderMcpMarkdown } from './mcp.js';
import { type Endpoint, pgbench } from './pgbench.js';
import { ask, type Child, cpuNs, cpuNsByThread, spawnChild, waitForPort } from './procs.js';
import { type CacheRow, type LargeRow, type PgbenchRow, type Results, renderMarkdown } from './report.js';
import {
  BENCH_DB,
  BENCH_MANAGED_DB,
  type BenchDatabase,
  findBinary,
  makeWorkDir,
  PGW_USERS,
  startDatabase,
  WIDE_ROWS,
  writeBouncerConfig,
  writePgwardenConfig,
} from './setup.js';
import { spread } from './stats.js';
import { benchSyscalls, type SyscallRow } from './syscalls.js';

const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(BENCH_DIR, '..');

const argv = process.argv.slice(2);
/** `--help`: the options, then exit (without it an unknown flag is ignored and the full run starts). */
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write(`usage: npm run bench -- [options]   (bench/README.md says what each section measures)
  --quick                 smoke run (pgbench -t, fewer queries), writes results/latest-quick.md
  --rounds N              rounds per section (default 3)
  --seconds S             pgbench -T of the full run (default 4)
  --connections N         idle clients of the connections section (default 1000)
  --only LIST             sections: pgbench,syscalls,large,connections,analysis,mcp
  --modes LIST            pgbench modes: simple,extended,prepared
  --clients LIST          pgbench client counts: 1,8
  --without LIST          pgbench targets left out: direct,pipe,pgbouncer,dba,masked,managed
  --before DIR            another tree's bench/proxy-process.ts as targets "before dba" / "before masked"
  --no-warm-up            no unmeasured warm-up run per mode
  --profile               V8 CPU profiles of the pgwarden processes (bench/results/profiles)
  --node-args "FLAGS"     flags for the pgwarden processes (e.g. --perf-basic-prof)
  --keep                  keep the work folder (every process's log)
`);
  process.exit(0);
}
const quick = argv.includes('--quick');
const profile = argv.includes('--profile');
const numArg = (name: string, dflt: number): number => {
  const i = argv.indexOf(name);
  return i >= 0 && argv[i + 1] ? Number(argv[i + 1]) : dflt;
};
const ROUNDS = numArg('--rounds', 3);
const SECONDS = numArg('--seconds', 4);
const CONNECTIONS = numArg('--connections', 1000);
/** `--only pgbench,syscalls,large,connections,analysis,mcp`: run only these sections (default all). */
const onlyArg = argv.includes('--only') ? argv[argv.indexOf('--only') + 1] : undefined;
const only = onlyArg ? new Set(onlyArg.split(',')) : undefined;
const want = (section: string) => only === undefined || only.has(section);
// `--keep`: the work folder (every process's log, pgbench's logs) stays after a successful run.
/**
 * `--before DIR`: another pgwarden tree (its own node_modules) run as a second pgbench process, with
 * targets `before dba` and `before masked` beside this tree's: a before/after in one run, under
 * the same load (issue 18).
 */
const beforeTree = argv.includes('--before') ? argv[argv.indexOf('--before') + 1] : undefined;
/** `--without direct,managed,…`: leave these pgbench targets out (direct, pipe, pgbouncer, dba, masked, managed). */
const withoutArg = argv.includes('--without') ? argv[argv.indexOf('--without') + 1] : undefined;
const without = new Set(withoutArg ? withoutArg.split(',') : []);
/** `--modes prepared,…` and `--clients 1|8`: only these pgbench modes and client counts (default all). */
const listArg = (name: string): string[] | undefined =>
  argv.includes(name) ? (argv[argv.indexOf(name) + 1] ?? '').split(',') : undefined;
const ALL_MODES = ['simple', 'extended', 'prepared'] as const;
const MODES = ALL_MODES.filter((m) => listArg('--modes')?.includes(m) ?? true);
const LEVELS = [
  { clients: 1, threads: 1 },
  { clients: 8, threads: 2 },
].filter((l) => listArg('--clients')?.includes(String(l.clients)) ?? true);

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const notices: string[] = [];
const notice = (msg: string) => {
  notices.push(msg);
  log(`NOTICE: ${msg}`);
};

/** A pgbench target: where it listens and, for pgwarden, its process (CPU, stats). */
interface Target {
  readonly name: string;
  readonly endpoint: Endpoint;
  readonly child?: Child;
  readonly pgwarden?: boolean;
}

function version(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0]?.trim() ?? '?';
  } catch {
    return '?';
  }
}

/** `--threads`: each pgbench run's proxy CPU per transaction by thread name, in the progress log. */
const byThread = argv.includes('--threads');
/** `--node-args "--trace-gc …"`: V8/Node flags for the pgwarden processes (their output lands in their logs; see --keep). */
const extraNodeArgs = argv.includes('--node-args')
  ? (argv[argv.indexOf('--node-args') + 1] ?? '').split(' ')
  : [];

/** `--before-node-args "FLAGS"`: flags for the `--before` tree's process only (A/B of a flag: the same tree as `--before`). */
const beforeNodeArgs = argv.includes('--before-node-args')
  ? (argv[argv.indexOf('--before-node-args') + 1] ?? '').split(' ').filter(Boolean)
  : [];

function nodeArgs(profileDir: string | undefined, script: string[], extra: readonly string[] = []): string[] {
  return [
    ...extraNodeArgs,
    ...extra,
    ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    ...script,
  ];
}

/** The analysis cache's counters and the gate memos' hits (memoHits: served before any cache lookup, no parse). */
type GateStats = AnalysisCacheStats & { readonly memoHits: number };

const diffStats = (a: GateStats, b: GateStats): GateStats => ({
  hits: b.hits - a.hits,
  normalizedHits: b.normalizedHits - a.normalizedHits,
  misses: b.misses - a.misses,
  memoHits: b.memoHits - a.memoHits,
});
const addStats = (a: GateStats, b: GateStats): GateStats => ({
  hits: a.hits + b.hits,
  normalizedHits: a.normalizedHits + b.normalizedHits,
  misses: a.misses + b.misses,
  memoHits: a.memoHits + b.memoHits,
});
const ZERO: GateStats = { hits: 0, normalizedHits: 0, misses: 0, memoHits: 0 };

async function main(): Promise<void> {
  const started = Date.now();
  const load0 = os.loadavg();
  const pgbenchBin = findBinary(['/usr/lib/postgresql/15/bin/pgbench'], 'pgbench');
  if (!pgbenchBin) {
    notice(
      'pgbench not found (apt-get install postgresql-15): skipping the pgbench and large-result sections',
    );
  }
  const bouncerBin = findBinary(['/usr/sbin/pgbouncer'], 'pgbouncer');
  if (!bouncerBin) notice('pgbouncer not found (apt-get install pgbouncer): skipping the PgBouncer target');
  const straceBin = want('syscalls') ? findBinary(['/usr/bin/strace'], 'strace') : undefined;
  if (want('syscalls') && !straceBin)
    notice('strace not found (apt-get install strace): skipping system calls');

  const workDir = makeWorkDir();
  const profileDir = profile ? path.join(BENCH_DIR, 'results', 'profiles') : undefined;
  if (profileDir) fs.mkdirSync(profileDir, { recursive: true });
  const children: Child[] = [];
  let db: BenchDatabase | undefined;
  let ok = false;
  try {
    log(`mode ${quick ? 'quick' : 'full'}, ${ROUNDS} rounds, work dir ${workDir}`);
    log('analysis micro-benchmark (in process, before anything else runs)');
    const analysis = want('analysis') ? await benchAnalysis(quick ? 3 : 10) : undefined;

    log('starting PostgreSQL and loading pgbench tables and bench_wide');
    if (!pgbenchBin) throw new Error('pgbench is required to load the bench tables');
    db = await startDatabase(workDir, pgbenchBin);
    const pgHost = db.server.host;
    const direct: Target = {
      name: 'direct',
      endpoint: {
        host: pgHost,
        port: db.server.port,
        user: DEMO_APP_ROLE,
        password: DEMO_APP_PASSWORD,
        database: BENCH_DB,
      },
    };

    const pipePort = await freePort();
    const pipe = spawnChild(
      process.execPath,
      ['--import', 'tsx', path.join(BENCH_DIR, 'pipe.ts'), String(pipePort), pgHost, String(db.server.port)],
      { logFile: path.join(workDir, 'pipe.log'), cwd: ROOT },
    );
    children.push(pipe);
    const pipeTarget: Target = {
      name: 'pipe',
      endpoint: { ...direct.endpoint, port: pipePort },
      child: pipe,
    };

    let bouncer: Target | undefined;
    if (bouncerBin) {
      const b = await writeBouncerConfig(workDir, db);
      const child = spawnChild(bouncerBin, [b.ini], {
        logFile: path.join(workDir, 'pgbouncer.out'),
        ...(b.uid !== undefined ? { uid: b.uid } : {}),
        ...(b.gid !== undefined ? { gid: b.gid } : {}),
      });
      children.push(child);
      bouncer = { name: 'pgbouncer', endpoint: { ...direct.endpoint, port: b.port }, child };
    }

    const pgwPort = await freePort();
    const pgwConfig = writePgwardenConfig(workDir, db, pgwPort, 'pgwarden-pgbench');
    const pgw = spawnChild(
      process.execPath,
      nodeArgs(profileDir, ['--import', 'tsx', path.join(BENCH_DIR, 'proxy-process.ts'), pgwConfig]),
      { logFile: path.join(workDir, 'pgwarden-pgbench.log'), ipc: true, cwd: ROOT },
    );
    children.push(pgw);
    const pgwEndpoint = { host: '127.0.0.1', port: pgwPort, database: BENCH_DB };
    const dba: Target = {
      name: 'pgwarden dba',
      endpoint: { ...pgwEndpoint, user: 'dba', password: PGW_USERS.dba },
      child: pgw,
      pgwarden: true,
    };
    const masked: Target = {
      name: 'pgwarden masked',
      endpoint: { ...pgwEndpoint, user: 'masked', password: PGW_USERS.masked },
      child: pgw,
      pgwarden: true,
    };
    // The masked user again, on the same tables under roles: managed (a set login upstream).
    const managed: Target = {
      name: 'pgwarden managed',
      endpoint: { ...pgwEndpoint, database: BENCH_MANAGED_DB, user: 'masked', password: PGW_USERS.masked },
      child: pgw,
      pgwarden: true,
    };
    await waitForPort(pipePort);
    if (bouncer) {
      try {
        await waitForPort(bouncer.endpoint.port, 10_000);
      } catch (e) {
        notice(`PgBouncer did not start (${(e as Error).message}; see ${workDir}/pgbouncer): skipping it`);
        bouncer = undefined;
      }
    }
    await waitForPort(pgwPort);
    const beforeTargets: Target[] = [];
    if (beforeTree) {
      const tree = path.resolve(beforeTree);
      const port = await freePort();
      const config = writePgwardenConfig(workDir, db, port, 'pgwarden-before');
      const child = spawnChild(
        process.execPath,
        nodeArgs(
          profileDir,
          ['--import', 'tsx', path.join(tree, 'bench', 'proxy-process.ts'), config],
          beforeNodeArgs,
        ),
        { logFile: path.join(workDir, 'pgwarden-before.log'), ipc: true, cwd: tree },
      );
      children.push(child);
      const endpoint = { host: '127.0.0.1', port, database: BENCH_DB };
      beforeTargets.push(
        { name: 'before dba', endpoint: { ...endpoint, user: 'dba', password: PGW_USERS.dba }, child },
        {
          name: 'before masked',
          endpoint: { ...endpoint, user: 'masked', password: PGW_USERS.masked },
          child,
        },
      );
      await waitForPort(port);
    }

    // 1. pgbench -S, targets interleaved round by round (order rotated each round).
    const short = (t: Target) => t.name.replace(/^pgwarden /, '');
    const targets = [
      direct,
      pipeTarget,
      ...(bouncer ? [bouncer] : []),
      dba,
      masked,
      managed,
      ...beforeTargets,
    ].filter((t) => !without.has(short(t)));
    const length = quick
      ? (clients: number) => ({ transactions: clients === 1 ? 600 : 300 })
      : () => ({ seconds: SECONDS });
    const samples = new Map<string, { tps: number[]; mean: number[]; p99: number[]; cpu: number[] }>();
    const cacheByMode = new Map<string, GateStats>();
    const logDir = path.join(workDir, 'pgbench-logs');
    fs.mkdirSync(logDir, { recursive: true });
    // Warm-up, not measured: every proxy process runs each mode once first, so that the rounds
    // measure code V8 has optimised (a proxy runs for days; its first thousand transactions JIT-
    // compile the relay, which cost a freshly started pgwarden 2–3× its steady CPU per transaction).
    if (want('pgbench') && !argv.includes('--no-warm-up')) {
      log('warm-up (not measured)');
      for (const t of targets.filter((x) => x.child)) {
        for (const mode of MODES) {
          await pgbench({
            bin: pgbenchBin,
            endpoint: t.endpoint,
            mode,
            clients: 1,
            threads: 1,
            length: { transactions: quick ? 1000 : 3000 },
          });
        }
      }
    }
    for (let round = 0; round < (want('pgbench') ? ROUNDS : 0); round++) {
      log(`pgbench round ${round + 1}/${ROUNDS}`);
      for (const level of LEVELS) {
        for (const mode of MODES) {
          const order = targets.map((_, i) => targets[(i + round) % targets.length] as Target);
          for (const t of order) {
            const before = t.pgwarden && t.child ? await statsOf(t.child) : undefined;
            const cpu0 = t.child ? cpuNs(t.child.pid) : 0;
            const threads0 = t.child && byThread ? cpuNsByThread(t.child.pid) : undefined;
            const r = await pgbench({
              bin: pgbenchBin,
              endpoint: t.endpoint,
              mode,
              clients: level.clients,
              threads: level.threads,
              length: length(level.clients),
              logDir,
            });
            const cpu = t.child ? (cpuNs(t.child.pid) - cpu0) / 1000 / r.transactions : Number.NaN;
            if (threads0 && t.child) {
              const parts = [...cpuNsByThread(t.child.pid)].map(
                ([name, ns]) =>
                  `${name} ${((ns - (threads0.get(name) ?? 0)) / 1000 / r.transactions).toFixed(1)}`,
              );
              log(
                `-c ${level.clients} ${mode} ${t.name}: ${cpu.toFixed(1)} µs/txn; by thread: ${parts.join(', ')}`,
              );
            }
            if (before && t.child) {
              const after = await statsOf(t.child);
              cacheByMode.set(mode, addStats(cacheByMode.get(mode) ?? ZERO, diffStats(before, after)));
            }
            const key = `${level.clients}|${mode}|${t.name}`;
            const s = samples.get(key) ?? { tps: [], mean: [], p99: [], cpu: [] };
            s.cpu.push(cpu);
            s.tps.push(r.tps);
            s.mean.push(r.latencyMeanMs);
            s.p99.push(r.latencyP99Ms);
            samples.set(key, s);
          }
        }
      }
    }
    const pgbenchRows: PgbenchRow[] = [];
    for (const level of LEVELS) {
      for (const mode of MODES) {
        const get = (name: string) => samples.get(`${level.clients}|${mode}|${name}`);
        const perRoundRatio = (name: string, base: string, of: 'tps' | 'cpu' = 'tps'): number | undefined => {
          const a = get(name);
          const b = get(base);
          if (!a || !b) return undefined;
          return spread(a[of].map((x, i) => x / (b[of][i] as number))).median;
        };
        for (const t of targets) {
          const s = get(t.name);
          if (!s) continue;
          pgbenchRows.push({
            clients: level.clients,
            threads: level.threads,
            mode,
            target: t.name,
            tps: spread(s.tps),
            latencyMeanMs: spread(s.mean).median,
            latencyP99Ms: spread(s.p99).median,
            cpuUsPerTxn: spread(s.cpu).median,
            cpuVsPipe: t.child ? perRoundRatio(t.name, 'pipe', 'cpu') : undefined,
            vsDirect: perRoundRatio(t.name, 'direct'),
            vsPipe: perRoundRatio(t.name, 'pipe'),
            vsBouncer: bouncer ? perRoundRatio(t.name, 'pgbouncer') : undefined,
          });
        }
      }
    }
    const cacheRows: CacheRow[] = MODES.map((mode) => ({ mode, ...(cacheByMode.get(mode) ?? ZERO) }));

    // 2. System calls per transaction (strace attached to each target process, pgbench -c 1 -t).
    let syscalls: SyscallRow[] = [];
    if (straceBin) {
      log('system calls per transaction (strace -c -f)');
      syscalls = await benchSyscalls({
        straceBin,
        pgbenchBin,
        targets: [pipeTarget, ...(bouncer ? [bouncer] : []), dba, masked, ...beforeTargets].map((t) => ({
          name: t.name,
          endpoint: t.endpoint,
          pid: t.child?.pid as number,
        })),
        modes: MODES,
        transactions: quick ? 1000 : 3000,
        workDir,
      });
    }

    // 3. Large results: 100k rows × 5 columns through `pgwarden serve` in its own process.
    let largeRows: LargeRow[] = [];
    if (want('large')) {
      log('large results');
      const servePort = await freePort();
      const serveConfig = writePgwardenConfig(workDir, db, servePort, 'pgwarden-serve');
      const serve = spawnChild(
        process.execPath,
        nodeArgs(profileDir, [path.join(ROOT, 'bin/pgwarden.js'), 'serve', '--config', serveConfig]),
        { logFile: path.join(workDir, 'pgwarden-serve.log'), cwd: ROOT },
      );
      children.push(serve);
      await waitForPort(servePort);
      largeRows = await benchLarge({
        pgbenchBin,
        targets: [
          direct,
          pipeTarget,
          { name: 'pgwarden unmasked', endpoint: { ...dba.endpoint, port: servePort }, pid: serve.pid },
          { name: 'pgwarden masked', endpoint: { ...masked.endpoint, port: servePort }, pid: serve.pid },
        ].map((t) => ({ name: t.name, endpoint: t.endpoint, pid: 'pid' in t ? t.pid : t.child?.pid })),
        rounds: ROUNDS,
        perQuery: quick ? 3 : 10,
        rows: WIDE_ROWS,
        workDir,
      });
      await serve.stop();
    }

    // 4. Connections: a fresh `pgwarden serve`, 1,000 idle authenticated clients.
    let connections: ConnectionResults | undefined;
    if (want('connections')) {
      log(`${CONNECTIONS} idle connections`);
      const connPort = await freePort();
      const connConfig = writePgwardenConfig(workDir, db, connPort, 'pgwarden-connections');
      const connProc = spawnChild(
        process.execPath,
        [path.join(ROOT, 'bin/pgwarden.js'), 'serve', '--config', connConfig],
        { logFile: path.join(workDir, 'pgwarden-connections.log'), cwd: ROOT },
      );
      children.push(connProc);
      await waitForPort(connPort);
      connections = await benchConnections(
        connProc.pid,
        { ...dba.endpoint, port: connPort },
        CONNECTIONS,
        25,
      );
      await connProc.stop();
    }

    // 5. MCP tool calls (bench/mcp.ts): the SDK client over stdio and HTTP, on the demo database.
    let mcp: McpResults | undefined;
    if (want('mcp')) {
      log('MCP tool calls');
      mcp = await benchMcp({ server: db.server, workDir, calls: quick ? 100 : 200, log });
    }

    const results: Results = {
      machine: {
        date: new Date().toISOString(),
        cores: os.cpus().length,
        cpu: os.cpus()[0]?.model.trim() ?? '?',
        memoryGb: Math.round(os.totalmem() / 2 ** 30),
        node: process.version,
        postgres: db.version,
        pgbench: version(pgbenchBin, ['--version']),
        pgbouncer: bouncerBin ? version(bouncerBin, ['--version']) : 'not installed',
        loadAverageStart: load0[0] ?? 0,
        loadAverageEnd: os.loadavg()[0] ?? 0,
      },
      run: {
        quick,
        rounds: ROUNDS,
        pgbenchLength: quick ? '-t 600 (-c 1), -t 300 per client (-c 8)' : `-T ${SECONDS}`,
        largeQueriesPerRound: quick ? 3 : 10,
        seconds: 0,
      },
      notices,
      pgbench: pgbenchRows,
      cache: cacheRows,
      large: largeRows,
      syscalls,
      analysis,
      connections,
    };
    results.run.seconds = Math.round((Date.now() - started) / 1000);
    const md = mcp ? `${renderMarkdown(results)}\n${renderMcpMarkdown(mcp)}` : renderMarkdown(results);
    process.stdout.write(`${md}\n`);
    const outDir = path.join(BENCH_DIR, 'results');
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(path.join(outDir, quick ? 'latest-quick.md' : 'latest.md'), `${md}\n`);
    fs.writeFileSync(
      path.join(BENCH_DIR, quick ? 'results-quick.json' : 'results.json'),
      `${JSON.stringify(mcp ? { ...results, mcp } : results, null, 2)}\n`,
    );
    log(`done in ${results.run.seconds} s`);
    ok = true;
  } finally {
    for (const c of children.reverse()) await c.stop();
    await db?.server.stop();
    if (ok && !argv.includes('--keep')) fs.rmSync(workDir, { recursive: true, force: true });
    else log(`${ok ? '' : 'failed: '}logs kept in ${workDir}`);
  }
}

async function statsOf(child: Child): Promise<GateStats> {
  const r = await ask<{
    stats: { analysis: AnalysisCacheStats };
    memo?: { exactHits: number; lexicalHits: number };
  }>(child, 'stats');
  // A --before tree's proxy-process.ts may not report its memo: its hits then count as none.
  return { ...r.stats.analysis, memoHits: (r.memo?.exactHits ?? 0) + (r.memo?.lexicalHits ?? 0) };
}

await main();

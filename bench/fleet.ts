// Fleet and workers side by side: pgbench -S against PostgreSQL, one `pgwarden serve`, `serve --workers 2`, and three instances behind HAProxy.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../src/embedded/postgres.js';
import { haproxyConfig } from '../test/helpers/haproxy.js';
import { type Endpoint, pgbench } from './pgbench.js';
import { type Child, cpuNs, spawnChild, waitForPort } from './procs.js';
import { BENCH_DB, findBinary, makeWorkDir, PGW_USERS, startDatabase, writePgwardenConfig } from './setup.js';
import { median } from './stats.js';

/**
 * `node --import tsx bench/fleet.ts [--seconds S] [--rounds N] [--clients C]`: each target gets
 * pgbench -S -M simple -c C (default 8) -j 2 -T S (default 10) for N rounds (default 2), the order
 * rotated each round; the report gives the median TPS and the pgwarden processes' CPU per
 * transaction. Needs pgbench (postgresql-15) and HAProxy; writes bench/results/fleet.md.
 */
const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const SECONDS = opt('seconds', 10);
const ROUNDS = opt('rounds', 2);
const CLIENTS = opt('clients', 8);
const BIN = path.resolve(import.meta.dirname, '../bin/pgwarden.js');

const pgbenchBin = findBinary(['/usr/lib/postgresql/15/bin/pgbench'], 'pgbench');
const haproxyBin = findBinary(['/usr/sbin/haproxy'], 'haproxy');
if (!pgbenchBin || !haproxyBin) {
  process.stderr.write('bench/fleet.ts needs pgbench (apt-get install postgresql-15) and haproxy\n');
  process.exit(1);
}

const workDir = makeWorkDir();
const db = await startDatabase(workDir, pgbenchBin);
const children: Child[] = [];

/** Starts `pgwarden serve` on a free port (with its admin API, for HAProxy's check); resolves once it listens. */
async function serve(
  name: string,
  extra: readonly string[] = [],
): Promise<{ port: number; adminPort: number; child: Child }> {
  const port = await freePort();
  const adminPort = await freePort();
  const file = writePgwardenConfig(workDir, db, port, name);
  const cfg = YAML.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  cfg.limits = { ...(cfg.limits as object), max_pending_per_address: 1024 };
  fs.writeFileSync(file, YAML.stringify(cfg));
  const child = spawnChild(
    process.execPath,
    [BIN, 'serve', '--config', file, '--admin', `127.0.0.1:${adminPort}`, ...extra],
    {
      logFile: path.join(workDir, `${name}.log`),
    },
  );
  children.push(child);
  await waitForPort(port, 60_000);
  await waitForPort(adminPort, 60_000);
  return { port, adminPort, child };
}

/** CPU (ns) of a process and its children (the workers of `--workers`), from /proc. */
function treeCpuNs(pid: number): number {
  let total = cpuNs(pid);
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) total += cpuNs(Number(p));
    } catch {}
  }
  return total;
}

interface Target {
  readonly name: string;
  readonly endpoint: Endpoint;
  readonly pids: readonly number[];
}

const user = (port: number, host = '127.0.0.1'): Endpoint => ({
  host,
  port,
  user: 'dba',
  password: PGW_USERS.dba,
  database: BENCH_DB,
});

try {
  const one = await serve('one');
  const workers = await serve('workers', ['--workers', '2']);
  const fleet = [await serve('fleet-1'), await serve('fleet-2'), await serve('fleet-3')];
  const lbPort = await freePort();
  const cfgFile = path.join(workDir, 'haproxy.cfg');
  fs.writeFileSync(
    cfgFile,
    haproxyConfig({
      bind: `127.0.0.1:${lbPort}`,
      servers: fleet.map((f, i) => ({ name: `pgwarden${i + 1}`, port: f.port, adminPort: f.adminPort })),
      check: '/healthz',
    }),
  );
  const lb = spawnChild(haproxyBin, ['-db', '-f', cfgFile], { logFile: path.join(workDir, 'haproxy.log') });
  children.push(lb);
  await waitForPort(lbPort);
  await new Promise((r) => setTimeout(r, 1500)); // the health checks mark the servers up
  const targets: Target[] = [
    {
      name: 'PostgreSQL (direct)',
      endpoint: {
        host: db.server.host,
        port: db.server.port,
        user: 'pgwarden_app',
        password: db.env.PGPASSWORD ?? '',
        database: BENCH_DB,
      },
      pids: [],
    },
    { name: 'one pgwarden serve', endpoint: user(one.port), pids: [one.child.pid] },
    { name: 'pgwarden serve --workers 2', endpoint: user(workers.port), pids: [workers.child.pid] },
    {
      name: 'three pgwarden serve behind HAProxy',
      endpoint: user(lbPort),
      pids: fleet.map((f) => f.child.pid),
    },
  ];
  const results = new Map<string, { tps: number[]; cpuUs: number[] }>();
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(k + round) % targets.length] as Target;
      const before = t.pids.map(treeCpuNs);
      const r = await pgbench({
        bin: pgbenchBin,
        endpoint: t.endpoint,
        mode: 'simple',
        clients: CLIENTS,
        threads: 2,
        length: { seconds: SECONDS },
      });
      const cpu = t.pids.map((p, i) => treeCpuNs(p) - (before[i] as number)).reduce((a, b) => a + b, 0);
      const row = results.get(t.name) ?? { tps: [], cpuUs: [] };
      row.tps.push(r.tps);
      row.cpuUs.push(t.pids.length ? cpu / 1000 / r.transactions : Number.NaN);
      results.set(t.name, row);
      process.stderr.write(`round ${round + 1}: ${t.name}: ${r.tps.toFixed(0)} tps\n`);
    }
  }
  const base = median(results.get('one pgwarden serve')?.tps ?? []);
  const lines = [
    `# Fleet and workers (${new Date().toISOString().slice(0, 10)}, ${(await import('node:os')).cpus().length} cores, PostgreSQL ${db.version})`,
    '',
    `pgbench -S -M simple -c ${CLIENTS} -j 2 -T ${SECONDS}, ${ROUNDS} rounds (median), user dba (nothing masked), audit on stderr at info.`,
    'The pgbench client, PostgreSQL, HAProxy and every pgwarden process share the same cores.',
    '',
    '| target | TPS | vs one instance | pgwarden CPU µs/txn |',
    '|---|---:|---:|---:|',
    ...targets.map((t) => {
      const r = results.get(t.name) as { tps: number[]; cpuUs: number[] };
      const tps = median(r.tps);
      const cpu = median(r.cpuUs);
      return `| ${t.name} | ${tps.toFixed(0)} | ${(tps / base).toFixed(2)}× | ${Number.isNaN(cpu) ? '–' : cpu.toFixed(0)} |`;
    }),
    '',
  ];
  const report = lines.join('\n');
  process.stdout.write(report);
  fs.mkdirSync(path.resolve(import.meta.dirname, 'results'), { recursive: true });
  fs.writeFileSync(path.resolve(import.meta.dirname, 'results/fleet.md'), report);
} finally {
  for (const c of children.reverse()) await c.stop();
  await db.server.stop();
  fs.rmSync(workDir, { recursive: true, force: true });
}

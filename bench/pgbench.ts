// Runs one pgbench measurement and reads TPS, mean latency and p99 latency (from its per-transaction log).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { percentile } from './stats.js';

const run = promisify(execFile);

/** Where and as whom pgbench connects. */
export interface Endpoint {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
}

/** One pgbench invocation. */
export interface PgbenchRun {
  readonly bin: string;
  readonly endpoint: Endpoint;
  readonly mode: 'simple' | 'extended' | 'prepared';
  readonly clients: number;
  readonly threads: number;
  /** `-T seconds` or `-t transactions per client`. */
  readonly length: { seconds: number } | { transactions: number };
  /** A script file (`-f`); default the built-in select-only script (`-S`). */
  readonly script?: string;
  /** Empty folder for the per-transaction logs (`-l`); omitted: no log, no p99. */
  readonly logDir?: string;
}

/** What one run measured. */
export interface PgbenchResult {
  readonly tps: number;
  readonly latencyMeanMs: number;
  readonly latencyP99Ms: number;
  readonly transactions: number;
}

/** Runs pgbench (`-n`: no vacuum, which would need MANAGE) and parses its report; throws on failure. */
export async function pgbench(r: PgbenchRun): Promise<PgbenchResult> {
  const e = r.endpoint;
  const args = [
    '-n',
    ...(r.script ? ['-f', r.script] : ['-S']),
    '-M',
    r.mode,
    '-c',
    String(r.clients),
    '-j',
    String(r.threads),
    ...('seconds' in r.length ? ['-T', String(r.length.seconds)] : ['-t', String(r.length.transactions)]),
    ...(r.logDir ? ['-l', `--log-prefix=${path.join(r.logDir, 'pgbench_log')}`] : []),
    '-h',
    e.host,
    '-p',
    String(e.port),
    '-U',
    e.user,
    e.database,
  ];
  let stdout: string;
  try {
    ({ stdout } = await run(r.bin, args, {
      env: { ...process.env, PGPASSWORD: e.password, PGAPPNAME: 'pgbench' },
      maxBuffer: 16 * 1024 * 1024,
    }));
  } catch (err) {
    const x = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`pgbench ${args.join(' ')} failed: ${x.stderr || x.stdout || x.message}`);
  }
  const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(stdout);
  const lat = /latency average = ([\d.]+) ms/.exec(stdout);
  const processed = /number of transactions actually processed: (\d+)/.exec(stdout);
  const failed = /number of failed transactions: (\d+)/.exec(stdout);
  if (!tps || !lat || !processed) throw new Error(`cannot read pgbench output:\n${stdout}`);
  if (failed && Number(failed[1]) > 0) throw new Error(`pgbench reported failed transactions:\n${stdout}`);
  let p99 = Number.NaN;
  if (r.logDir) {
    const latencies: number[] = [];
    for (const f of fs.readdirSync(r.logDir)) {
      const text = fs.readFileSync(path.join(r.logDir, f), 'utf8');
      for (const line of text.split('\n')) {
        // client_id transaction_no time(µs) script_no time_epoch time_us
        const us = line.split(' ')[2];
        if (us !== undefined) latencies.push(Number(us));
      }
      fs.rmSync(path.join(r.logDir, f));
    }
    p99 = percentile(latencies, 99) / 1000;
  }
  return {
    tps: Number(tps[1]),
    latencyMeanMs: Number(lat[1]),
    latencyP99Ms: p99,
    transactions: Number(processed[1]),
  };
}

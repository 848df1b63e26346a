// Runs `pgwarden demo` (npm start) as a child process: its own embedded PostgreSQL, the demo config, the proxy.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../src/embedded/postgres.js';
import { BIN } from './serve-process.js';

/** A running `pgwarden demo` and what it printed so far. */
export interface DemoProcess {
  readonly child: ChildProcess;
  /** The proxy's port on 127.0.0.1. */
  readonly port: number;
  /** The file it records its ports in (`--record`). */
  readonly record: string;
  /** Its stdout so far (the banner). */
  out(): string;
  /** Its stderr so far (pretty log lines, audit included). */
  err(): string;
  /** Ctrl-C (SIGINT); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** The environment without any PGWARDEN_ variable: what a new shell has. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PGWARDEN_')));
}

/**
 * Spawns `pgwarden demo --data <dir>/demo-data --listen 127.0.0.1:<free port> --record
 * <dir>/demo.env` in a shell-like environment and resolves once it prints `Ctrl-C stops` (its
 * PostgreSQL and proxy are up); rejects after `ms` (default 120 s, initdb on a loaded machine)
 * with what it printed. `dir` must be enterable by the `postgres` OS user (it is made 0755).
 * The caller stops it.
 */
export async function startDemo(dir: string, ms = 120_000): Promise<DemoProcess> {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(dir, 0o755);
  const record = path.join(dir, 'demo.env');
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [BIN, 'demo', '--data', path.join(dir, 'demo-data'), '--listen', `127.0.0.1:${port}`, '--record', record],
    { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv() },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const deadline = Date.now() + ms;
  while (!out.includes('Ctrl-C stops')) {
    if (gone || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`pgwarden demo did not start:\n${out}\n${err}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    port,
    record,
    out: () => out,
    err: () => err,
    async stop() {
      if (!gone) child.kill('SIGINT');
      return exited;
    },
  };
}

// Runs `pgwarden serve` as a child process with a config object, collecting its JSON log lines.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { freePort } from '../../src/embedded/postgres.js';
import { testEnv } from './proxy.js';

/** The pgwarden executable. */
export const BIN = path.resolve(import.meta.dirname, '../../bin/pgwarden.js');

/** A running `pgwarden serve` with its collected log lines; `waitFor` polls them. */
export interface Served {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  port: number;
  waitFor(pred: (l: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

/**
 * Writes `cfg` (its `listen` set to a free port) to `file`, spawns `pgwarden serve --config file
 * …args`, and resolves once the proxy logs `listening`. The caller kills the child.
 */
export async function serveProcess(
  cfg: Record<string, unknown>,
  file: string,
  args: readonly string[] = [],
): Promise<Served> {
  const port = await freePort();
  cfg.listen = `127.0.0.1:${port}`;
  fs.writeFileSync(file, YAML.stringify(cfg));
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file, ...args], {
    env: testEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buf = '';
  child.stderr?.on('data', (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        lines.push({ raw: line });
      }
      i = buf.indexOf('\n');
    }
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const waitFor = async (pred: (l: Record<string, unknown>) => boolean, ms = 15_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = lines.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no such log line; got ${JSON.stringify(lines)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await waitFor((l) => l.event === 'listening');
  return { child, lines, port, waitFor, exited };
}

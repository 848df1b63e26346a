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
  readonly child: ChildProcess;
  /** Every line so far: the parsed JSON object, or `{ raw: line }` for a line that is not JSON. */
  readonly lines: Record<string, unknown>[];
  /** The same lines as written. */
  readonly raw: string[];
  readonly port: number;
  /** Resolves with the first line `pred` accepts; rejects after `ms` (default 15 s) with all lines. */
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
  const raw: string[] = [];
  let buf = '';
  child.stderr?.on('data', (d: Buffer) => {
    buf += d.toString();
    let i = buf.indexOf('\n');
    while (i >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      raw.push(line);
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
  // Starting node takes 7-9 s on a machine loaded 15 times over, and roles: managed syncs grants
  // before listening: the start is not what these suites time.
  await waitFor((l) => l.event === 'listening', 60_000);
  return { child, lines, raw, port, waitFor, exited };
}

/**
 * The keys that appear more than once in one object of a JSON text (`{"msg":1,"msg":2}` → `["msg"]`),
 * at any depth; JSON.parse keeps the last silently. Assumes `text` is valid JSON.
 */
export function duplicateJsonKeys(text: string): string[] {
  const dups: string[] = [];
  const stack: { object: boolean; keys: Set<string>; expectKey: boolean }[] = [];
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    const top = stack[stack.length - 1];
    if (ch === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (top?.object && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) dups.push(key);
        top.keys.add(key);
        top.expectKey = false;
      }
      i = j;
    } else if (ch === '{') stack.push({ object: true, keys: new Set(), expectKey: true });
    else if (ch === '[') stack.push({ object: false, keys: new Set(), expectKey: false });
    else if (ch === '}' || ch === ']') stack.pop();
    else if (ch === ',' && top?.object) top.expectKey = true;
  }
  return dups;
}

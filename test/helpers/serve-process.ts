// Runs `pgwarden serve` as a child process with a config object, collecting its JSON log lines.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
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
  /** Resolves with the first collected line matching `pred`; throws after `ms` (default 60 s) naming the lines seen. */
  waitFor(pred: (l: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

/** How long a child that did not start gets after SIGTERM before SIGKILL (ms). */
export const KILL_GRACE_MS = 2000;

/**
 * Stops `child`: SIGTERM, then SIGKILL when it has not exited after {@link KILL_GRACE_MS}.
 * Resolves once it has exited (at once when it already had).
 */
export async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const killed = new Promise<void>((r) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      r();
    }, KILL_GRACE_MS);
  });
  await Promise.race([exited, killed]);
  clearTimeout(timer);
  await exited;
}

/**
 * Every `pgwarden serve` child not yet exited. When a suite's hooks time out on a loaded machine its
 * afterAll may never stop what its beforeAll started; the test worker's exit kills what is left, so
 * no orphan keeps the shared PostgreSQL's connections (or the machine's CPU) after the file ends.
 */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Writes `cfg` (its `listen` set to port 0 of 127.0.0.1: the kernel picks the port as the proxy
 * binds, so no other test's connection or server can take it between choice and bind, which a port
 * chosen beforehand allowed) to `file`, spawns `pgwarden serve --config file
 * …args`, and resolves once the proxy logs `listening`. The caller kills the child. When it does
 * not get there (the wait times out, the child exits first), the child is stopped here (SIGTERM,
 * then SIGKILL after {@link KILL_GRACE_MS}) before the error is thrown, so no `pgwarden serve` is
 * left orphaned.
 */
export async function serveProcess(
  cfg: Record<string, unknown>,
  file: string,
  args: readonly string[] = [],
): Promise<Served> {
  cfg.listen = '127.0.0.1:0';
  fs.writeFileSync(file, YAML.stringify(cfg));
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file, ...args], {
    env: testEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
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
  // Every wait is for a line that must come; the bound only turns a missing line into a failure, so it
  // is generous: on a machine loaded 20 times over an admin listener took more than 15 s to say so.
  const waitFor = async (pred: (l: Record<string, unknown>) => boolean, ms = 60_000) => {
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
  const listening = waitFor((l) => l.event === 'listening', 60_000);
  listening.catch(() => {});
  let port = 0;
  try {
    const outcome = await Promise.race([
      listening.then((l) => {
        port = l.port as number;
        return 'listening';
      }),
      exited.then((code) => code),
    ]);
    if (outcome !== 'listening')
      throw new Error(`pgwarden serve exited (${outcome}) before listening; got ${JSON.stringify(lines)}`);
  } catch (e) {
    await stopChild(child, exited);
    throw e;
  }
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

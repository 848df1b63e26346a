// Test harness for `pgwarden mcp`: a config with API keys, and the SDK's own client over stdio and HTTP.
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import YAML from 'yaml';
import { createScramVerifier } from '../../../src/auth/scram-verifier.js';
import { demoConfigObject, testEnv } from '../../helpers/proxy.js';

export const BIN = path.resolve(import.meta.dirname, '../../../bin/pgwarden.js');
export const ROOT = path.resolve(import.meta.dirname, '../../..');

/** Tokens of the test keys (their verifiers go in the config; the tokens only here). */
export const TOKENS = {
  analyst: 'pgwt_analyst-test-token',
  support: 'pgwt_support-test-token',
  revoked: 'pgwt_revoked-test-token',
  expired: 'pgwt_expired-test-token',
  narrow: 'pgwt_narrow-test-token',
} as const;

/** Key ids of the test keys. */
export const KEY_IDS = {
  analyst: 'pgw_analyst01',
  support: 'pgw_support01',
  revoked: 'pgw_revoked01',
  expired: 'pgw_expired01',
  narrow: 'pgw_narrow01',
} as const;

/**
 * The demo config plus: API keys for the analyst (reads, three hidden columns) and support (reads,
 * INSERT, UPDATE) roles, a revoked and an expired key, a key for role `narrow` (orders only), and a
 * database `other` no role mentions (the dba role's `*` narrowed to `demo`, so `other` stays unruled).
 */
export function mcpConfigObject(): Record<string, unknown> {
  const cfg = demoConfigObject();
  const roles = cfg.roles as Record<string, { permissions: { database?: string }[] }>;
  for (const p of roles.dba!.permissions) if (p.database === '*') p.database = 'demo';
  (cfg.roles as Record<string, unknown>).narrow = {
    tenants: [],
    permissions: [
      { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo', schema: 'public', table: 'orders' },
    ],
  };
  const dbs = cfg.databases as Record<string, { url: string }>;
  dbs.other = { url: dbs.demo!.url };
  const v = (t: string) => createScramVerifier(t, { iterations: 4096 });
  cfg.api_keys = [
    { id: KEY_IDS.analyst, scram: v(TOKENS.analyst), roles: ['analyst'], description: 'analyst agent' },
    { id: KEY_IDS.support, scram: v(TOKENS.support), roles: ['support'] },
    { id: KEY_IDS.narrow, scram: v(TOKENS.narrow), roles: ['narrow'] },
    { id: KEY_IDS.revoked, scram: v(TOKENS.revoked), roles: ['analyst'], revoked: true },
    {
      id: KEY_IDS.expired,
      scram: v(TOKENS.expired),
      roles: ['analyst'],
      created_at: '2024-01-01T00:00:00Z',
      expires_at: '2024-06-01T00:00:00Z',
    },
  ];
  return cfg;
}

/** Writes `cfg` to a fresh temporary file; returns its path. */
export function writeConfig(cfg: Record<string, unknown>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-mcp-'));
  const file = path.join(dir, 'pgwarden.yaml');
  fs.writeFileSync(file, YAML.stringify(cfg));
  return file;
}

/** Collects a child's stderr JSON log lines. */
export class LogLines {
  readonly lines: Record<string, unknown>[] = [];
  private buf = '';

  /** Feeds a chunk of stderr. */
  push(chunk: Buffer | string): void {
    this.buf += chunk.toString();
    let i = this.buf.indexOf('\n');
    while (i >= 0) {
      const line = this.buf.slice(0, i);
      this.buf = this.buf.slice(i + 1);
      try {
        this.lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.lines.push({ raw: line });
      }
      i = this.buf.indexOf('\n');
    }
  }

  /** Waits for a line matching `pred` (15 s by default). */
  async waitFor(
    pred: (l: Record<string, unknown>) => boolean,
    ms = 15_000,
  ): Promise<Record<string, unknown>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = this.lines.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no such log line; got ${JSON.stringify(this.lines)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** An SDK client connected to a `pgwarden mcp` over stdio, with the child's log lines. */
export interface StdioSession {
  readonly client: Client;
  readonly logs: LogLines;
  /** The child's process id (null once it has exited). */
  pid(): number | null;
  close(): Promise<void>;
}

/** Spawns `node bin/pgwarden.js mcp --config <file>` with PGWARDEN_API_KEY=`token` and connects the SDK client. */
export async function connectStdio(file: string, token: string): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--config', file],
    env: { ...(testEnv() as Record<string, string>), PGWARDEN_API_KEY: token },
    cwd: ROOT,
    stderr: 'pipe',
  });
  const logs = new LogLines();
  transport.stderr?.on('data', (d: Buffer) => logs.push(d));
  const client = new Client({ name: 'pgwarden-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, logs, pid: () => transport.pid, close: () => client.close() };
}

/** A `pgwarden mcp --http` child process. */
export interface HttpServerChild {
  readonly child: ChildProcess;
  readonly url: string;
  readonly logs: LogLines;
  stop(): Promise<void>;
}

/**
 * Spawns `pgwarden mcp --config <file> --http 127.0.0.1:0` and waits until it listens (its URL has the bound port);
 * `env` adds to the test environment (e.g. `PGWARDEN_LOG_LEVEL: 'debug'`).
 */
export async function startHttpChild(
  file: string,
  env: Record<string, string> = {},
): Promise<HttpServerChild> {
  // Port 0: the kernel picks it as the child binds (a port chosen beforehand could be taken meanwhile).
  const child = spawn(process.execPath, [BIN, 'mcp', '--config', file, '--http', '127.0.0.1:0'], {
    env: { ...testEnv(), ...env },
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs = new LogLines();
  child.stderr?.on('data', (d: Buffer) => logs.push(d));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  // Under roles: managed the start syncs grants first: slow on a loaded machine.
  const listening = await logs.waitFor((l) => l.event === 'mcp-listening', 60_000);
  const port = listening.port as number;
  return {
    child,
    url: `http://127.0.0.1:${port}/mcp`,
    logs,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Connects the SDK client over Streamable HTTP with `Authorization: Bearer <token>`. */
export async function connectHttp(url: string, token: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'pgwarden-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

/** Calls a tool; returns the result with its text content joined. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult & { text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = result.content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
  return { ...result, text };
}

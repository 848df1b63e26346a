// MCP tool latency: the SDK's Client driving `pgwarden mcp` over stdio and Streamable HTTP on the demo database.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import YAML from 'yaml';
import { DEMO_APP_PASSWORD, DEMO_DIR, ensureDemoDatabase } from '../src/embedded/demo.js';
import { type EmbeddedServer, freePort, startEmbeddedPostgres } from '../src/embedded/postgres.js';
import { cpuNs, spawnChild, waitForPort } from './procs.js';
import { percentile } from './stats.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN = path.join(ROOT, 'bin/pgwarden.js');

/** The demo's own API key (examples/demo/pgwarden.yaml: id `agent`, role analyst, three hidden columns). */
export const DEMO_AGENT_TOKEN = 'agent-demo-token';

/** Targets of issue 18, after the first call (ms). */
export const MCP_TARGETS = { p50Ms: 15, p99Ms: 50 } as const;

/** The calls measured, in this order: the demo's three tables, a described table with two masked columns, one row with a masked cell. */
export const MCP_CALLS: readonly { readonly tool: string; readonly args: Record<string, unknown> }[] = [
  { tool: 'list_tables', args: { database: 'demo' } },
  { tool: 'describe_table', args: { database: 'demo', table: 'users' } },
  {
    tool: 'execute_query',
    args: { database: 'demo', sql: 'SELECT id, name, email FROM users WHERE id = $1', params: [1] },
  },
];

/** One tool over one transport: the first call of a fresh server, then `calls` more. */
export interface McpToolRow {
  readonly transport: 'stdio' | 'http';
  readonly tool: string;
  /** The first call of this tool on a freshly started `pgwarden mcp` (pool login, first catalog read), ms. */
  readonly firstMs: number;
  readonly calls: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** CPU time (user + system) of the `pgwarden mcp` process per call, over the `calls` calls, ms. */
  readonly serverCpuMs: number;
  /** p50 ≤ 15 ms and p99 ≤ 50 ms. */
  readonly met: boolean;
}

/** The MCP section's results. */
export interface McpResults {
  readonly rows: readonly McpToolRow[];
  /** Time from spawning the stdio server to its MCP handshake done, ms. */
  readonly stdioStartMs: number;
}

/** Options of {@link benchMcp}. */
export interface McpBenchOptions {
  /** The running PostgreSQL (the `demo` database is created on it when missing). */
  readonly server: EmbeddedServer;
  /** Scratch folder for the config and the servers' logs. */
  readonly workDir: string;
  /** Calls per tool and transport after the first (default 200). */
  readonly calls?: number;
  readonly log?: (msg: string) => void;
  /** The `pgwarden` executable to run (default: this tree's bin/pgwarden.js; another tree's, to compare). */
  readonly bin?: string;
  /** Write V8 CPU profiles of both `pgwarden mcp` processes here (`node --cpu-prof`). */
  readonly profileDir?: string;
}

/** The demo config pointed at `server`, with its own `agent` key; written to `workDir`; returns the file. */
function writeDemoConfig(server: EmbeddedServer, workDir: string): string {
  const cfg = YAML.parse(fs.readFileSync(path.join(DEMO_DIR, 'pgwarden.yaml'), 'utf8')) as Record<
    string,
    unknown
  >;
  cfg.listen = '127.0.0.1:0';
  delete cfg.env_file;
  delete cfg.keys_file;
  const dbs = cfg.databases as Record<string, { url: string }>;
  dbs.demo = { url: `postgres://pgwarden_app:${DEMO_APP_PASSWORD}@${server.host}:${server.port}/demo` };
  const file = path.join(workDir, 'pgwarden-mcp.yaml');
  fs.writeFileSync(file, YAML.stringify(cfg));
  return file;
}

async function timedCall(client: Client, tool: string, args: Record<string, unknown>): Promise<number> {
  const t0 = performance.now();
  const r = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
  const ms = performance.now() - t0;
  if (r.isError) {
    const text = r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
    throw new Error(`${tool} failed: ${text}`);
  }
  return ms;
}

async function measure(
  client: Client,
  transport: 'stdio' | 'http',
  pid: number,
  calls: number,
  log: (m: string) => void,
): Promise<McpToolRow[]> {
  const first = new Map<string, number>();
  for (const c of MCP_CALLS) first.set(c.tool, await timedCall(client, c.tool, c.args));
  const rows: McpToolRow[] = [];
  for (const c of MCP_CALLS) {
    const ms: number[] = [];
    const cpu0 = cpuNs(pid);
    for (let i = 0; i < calls; i++) ms.push(await timedCall(client, c.tool, c.args));
    const serverCpuMs = (cpuNs(pid) - cpu0) / 1e6 / calls;
    const p50 = percentile(ms, 50);
    const p99 = percentile(ms, 99);
    rows.push({
      transport,
      tool: c.tool,
      firstMs: first.get(c.tool) ?? Number.NaN,
      calls,
      p50Ms: p50,
      p99Ms: p99,
      maxMs: Math.max(...ms),
      serverCpuMs,
      met: p50 <= MCP_TARGETS.p50Ms && p99 <= MCP_TARGETS.p99Ms,
    });
    log(
      `mcp ${transport} ${c.tool}: first ${first.get(c.tool)?.toFixed(1)} ms, p50 ${p50.toFixed(1)}, p99 ${p99.toFixed(1)}, server CPU ${serverCpuMs.toFixed(2)} ms/call`,
    );
  }
  return rows;
}

/**
 * The MCP section: creates the `demo` database on `opts.server` if missing, writes the demo config
 * (its `agent` key, role analyst), then (1) spawns `node bin/pgwarden.js mcp --config <file>` with
 * PGWARDEN_API_KEY as the SDK's StdioClientTransport does, (2) spawns `pgwarden mcp --http
 * 127.0.0.1:<port>` and connects StreamableHTTPClientTransport with `Authorization: Bearer`. On each,
 * the first call of list_tables, describe_table and a one-row execute_query is timed alone (a fresh
 * server: pool login, first catalog read), then `calls` calls per tool, one at a time; p50/p99 by
 * nearest rank. A tool error aborts the run (rejects with its text).
 */
export async function benchMcp(opts: McpBenchOptions): Promise<McpResults> {
  const log = opts.log ?? (() => {});
  const calls = opts.calls ?? 200;
  await ensureDemoDatabase(opts.server, 'demo');
  const file = writeDemoConfig(opts.server, opts.workDir);
  const rows: McpToolRow[] = [];
  const bin = opts.bin ?? BIN;
  const prof = opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`] : [];

  const t0 = performance.now();
  const stdioLog = fs.createWriteStream(path.join(opts.workDir, 'pgwarden-mcp-stdio.log'));
  const stdio = new StdioClientTransport({
    command: process.execPath,
    args: [...prof, bin, 'mcp', '--config', file],
    env: { ...(process.env as Record<string, string>), PGWARDEN_API_KEY: DEMO_AGENT_TOKEN },
    cwd: ROOT,
    stderr: 'pipe',
  });
  stdio.stderr?.pipe(stdioLog);
  const stdioClient = new Client({ name: 'pgwarden-bench', version: '1.0.0' });
  await stdioClient.connect(stdio);
  const stdioStartMs = performance.now() - t0;
  try {
    rows.push(...(await measure(stdioClient, 'stdio', stdio.pid ?? 0, calls, log)));
  } finally {
    await stdioClient.close();
  }

  const port = await freePort();
  const http = spawnChild(
    process.execPath,
    [...prof, bin, 'mcp', '--config', file, '--http', `127.0.0.1:${port}`],
    {
      logFile: path.join(opts.workDir, 'pgwarden-mcp-http.log'),
      cwd: ROOT,
    },
  );
  try {
    await waitForPort(port);
    const client = new Client({ name: 'pgwarden-bench', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), {
        requestInit: { headers: { Authorization: `Bearer ${DEMO_AGENT_TOKEN}` } },
      }),
    );
    try {
      rows.push(...(await measure(client, 'http', http.pid, calls, log)));
    } finally {
      await client.close();
    }
  } finally {
    await http.stop();
  }
  return { rows, stdioStartMs };
}

/** The section as markdown: one row per (transport, tool), with met / not met against {@link MCP_TARGETS}. */
export function renderMcpMarkdown(r: McpResults): string {
  const f = (x: number) => x.toFixed(1);
  const lines = [
    '## MCP tool calls',
    '',
    `The SDK's Client against \`pgwarden mcp\` on the demo database (key \`agent\`, role analyst), one call at a time. ` +
      `Target after the first call: p50 ≤ ${MCP_TARGETS.p50Ms} ms and p99 ≤ ${MCP_TARGETS.p99Ms} ms. ` +
      `stdio server start to handshake: ${f(r.stdioStartMs)} ms.`,
    '',
    '| transport | tool | first call ms | calls | p50 ms | p99 ms | max ms | server CPU ms/call | goal |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const x of r.rows) {
    lines.push(
      `| ${x.transport} | ${x.tool} | ${f(x.firstMs)} | ${x.calls} | ${f(x.p50Ms)} | ${f(x.p99Ms)} | ${f(x.maxMs)} | ${x.serverCpuMs.toFixed(2)} | ${x.met ? 'met' : 'not met'} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}

// Alone: `node --import tsx bench/mcp.ts [--calls N] [--profile DIR] [--bin PATH]` starts its own PostgreSQL.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i >= 0 ? process.argv[i + 1] : undefined;
  };
  const calls = Number(arg('--calls') ?? 200);
  const profileDir = arg('--profile');
  const bin = arg('--bin');
  const workDir = fs.mkdtempSync(path.join('/tmp', 'pgwarden-bench-mcp-'));
  fs.chmodSync(workDir, 0o755);
  const server = await startEmbeddedPostgres({ dataDir: path.join(workDir, 'data'), persistent: false });
  try {
    const r = await benchMcp({
      server,
      workDir,
      calls,
      ...(profileDir ? { profileDir: path.resolve(profileDir) } : {}),
      ...(bin ? { bin: path.resolve(bin) } : {}),
      log: (m) => process.stderr.write(`[bench] ${m}\n`),
    });
    process.stdout.write(renderMcpMarkdown(r));
  } finally {
    await server.stop();
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

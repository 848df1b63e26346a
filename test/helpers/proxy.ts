// Starts an in-process pgwarden in front of the test PostgreSQL, with the demo config or a variant of it.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import YAML from 'yaml';
import { DEMO_APP_PASSWORD, DEMO_DIR } from '../../src/embedded/demo.js';
import { type LoadedConfig, parseConfig } from '../../src/policy/config-load.js';
import type { WallSwitches } from '../../src/policy/wall-switches.js';
import type { ProxyOptions, ProxyServer } from '../../src/proxy/proxy-port.js';
import { startProxy } from '../../src/proxy/server.js';

let workspaces = 0;

/**
 * The demo config as a plain object, pointed at the test PostgreSQL, listening on a free port.
 * Its `roles: managed` database gets a `role_prefix` of its own (`t<pid>x<n>_`): suites run side
 * by side on one cluster, each proxy with its own rules, and two proxies syncing one set login's
 * grants to different rules would undo each other (a prefix is how several workspaces share a
 * cluster, README "Managed roles"). Delete it to test the demo's own role names.
 */
export function demoConfigObject(): Record<string, unknown> {
  const raw = YAML.parse(fs.readFileSync(path.join(DEMO_DIR, 'pgwarden.yaml'), 'utf8')) as Record<
    string,
    unknown
  >;
  workspaces++;
  for (const db of Object.values(raw.databases as Record<string, Record<string, unknown>>))
    if (db.roles === 'managed') db.role_prefix = `t${process.pid}x${workspaces}_`;
  raw.listen = '127.0.0.1:0';
  // The tests pass their environment explicitly (testEnv), never a running demo's recorded ports.
  delete raw.env_file;
  // A login on a loaded CI machine may take seconds: the 10 s authentication timeout is not under test here.
  raw.limits = { auth_failure_delay_ms: 10, shutdown_grace_ms: 2000, authentication_timeout_ms: 60_000 };
  return raw;
}

/** The demo config with MANAGE on database demo added to workspace role `role` (its SEE rules unchanged: analyst, alice, still sees no users.ssn). */
export function demoConfigWithManage(role: string): Record<string, unknown> {
  const cfg = demoConfigObject();
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles[role]?.permissions.push({ effect: 'allow', actions: ['MANAGE'], database: 'demo' });
  return cfg;
}

/**
 * The demo config under `roles: single`: the upstream login owns the tables, so PostgreSQL's own
 * privileges are no wall (the analysis and mask at read are what a test then proves).
 */
export function demoConfigSingle(): Record<string, unknown> {
  const c = demoConfigObject();
  for (const db of Object.values(c.databases as Record<string, Record<string, unknown>>)) {
    db.roles = 'single';
    delete db.role_prefix;
  }
  return c;
}

/** Environment the demo config's `${…}` references need in tests. */
export function testEnv(): NodeJS.ProcessEnv {
  const { port } = inject('pg');
  return {
    ...process.env,
    PGWARDEN_UPSTREAM_PORT: String(port),
    PGWARDEN_UPSTREAM_PASSWORD: DEMO_APP_PASSWORD,
  };
}

/** Validates a config object as the CLI would (YAML text round trip, env substitution). */
export function loadTestConfig(obj: Record<string, unknown>): LoadedConfig {
  return parseConfig(YAML.stringify(obj), path.join(DEMO_DIR, 'pgwarden.yaml'), testEnv());
}

/** A started proxy and helpers to reach it. */
export interface TestProxy {
  readonly server: ProxyServer;
  readonly port: number;
  url(user: string, password?: string, database?: string): string;
  client(user: string, password?: string, database?: string): Promise<pg.Client>;
  close(): Promise<void>;
}

/** Starts a proxy with `obj` (default: the demo config). Logs go nowhere unless PGWARDEN_TEST_LOG is set. */
export async function startTestProxy(
  obj: Record<string, unknown> = demoConfigObject(),
  opts: {
    logLines?: Record<string, unknown>[];
    /** The level of what goes to `logLines` (default info). */
    logLevel?: 'info' | 'debug';
    walls?: WallSwitches;
    proxy?: ProxyOptions;
  } = {},
): Promise<TestProxy> {
  const lines = opts.logLines;
  const logger = lines
    ? pino(
        { level: opts.logLevel ?? 'info' },
        { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) },
      )
    : pino({ level: process.env.PGWARDEN_TEST_LOG ?? 'silent' });
  const server = await startProxy(loadTestConfig(obj), logger, {
    ...opts.proxy,
    ...(opts.walls ? { walls: opts.walls } : {}),
  });
  const port = server.address.port;
  const url = (user: string, password = user, database = 'demo') =>
    `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return {
    server,
    port,
    url,
    async client(user, password = user, database = 'demo') {
      const c = new pg.Client({ connectionString: url(user, password, database) });
      await c.connect();
      return c;
    },
    close: () => server.close(500),
  };
}

// Shared helpers of the driver suites: run an external client, require it loudly, make a scratch database, tap the wire.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { DEMO_APP_ROLE, DEMO_DIR } from '../../../src/embedded/demo.js';
import { FrontendCode } from '../../../src/wire/codes.js';
import { MessageFramer } from '../../../src/wire/framer.js';
import { decodeBind, decodeParse } from '../../../src/wire/frontend.js';
import { demoConfigObject } from '../proxy.js';

/**
 * Checks that a driver or tool is installed by running `check`; throws (failing the suite, never
 * skipping it) with the Debian package to install when it is not. Returns the check's stdout.
 */
export function requireTool(what: string, check: readonly string[], debianPackage: string): string {
  const [cmd, ...args] = check;
  if (!cmd) throw new Error('requireTool: empty command');
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 });
  if (r.error || r.status !== 0) {
    throw new Error(
      `${what} is missing (\`${check.join(' ')}\` failed: ${r.error?.message ?? r.stderr.trim()}). ` +
        `Install it with \`apt-get install -y ${debianPackage}\` (.ci/run does this); this suite never skips.`,
    );
  }
  return `${r.stdout}${r.stderr}`.trim();
}

/** A client logged in as the test server's superuser, on `database`. */
export async function superuserClient(database = 'postgres'): Promise<pg.Client> {
  const { host, port, superuser, superuserPassword } = inject('pg');
  const c = new pg.Client({ host, port, user: superuser, password: superuserPassword, database });
  await c.connect();
  return c;
}

/**
 * Creates `name` fresh (dropped first) as the superuser, owned by the proxy's upstream login, and
 * loads the demo schema and rows into it when `demo` is set.
 */
export async function freshDatabase(name: string, demo: boolean): Promise<void> {
  const admin = await superuserClient();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} OWNER ${DEMO_APP_ROLE}`);
  } finally {
    await admin.end();
  }
  if (!demo) return;
  const app = await appClient(name);
  try {
    await app.query(fs.readFileSync(path.join(DEMO_DIR, 'schema.sql'), 'utf8'));
    await app.query(fs.readFileSync(path.join(DEMO_DIR, 'data.sql'), 'utf8'));
  } finally {
    await app.end();
  }
}

/** Drops a database made by {@link freshDatabase}. */
export async function dropDatabase(name: string): Promise<void> {
  const admin = await superuserClient();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/** A client logged in directly upstream as the proxy's own login (pgwarden_app). */
export async function appClient(database: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: appUrl(database) });
  await c.connect();
  return c;
}

/** The URL of the proxy's own upstream login on `database`. */
export function appUrl(database: string): string {
  const { port } = inject('pg');
  return `postgres://${DEMO_APP_ROLE}:pgwarden-app-demo@127.0.0.1:${port}/${database}`;
}

/** The `databases.<name>` entry of a proxy config for a database on the test server. */
export function upstreamEntry(database: string): { url: string } {
  return {
    url: `postgres://pgwarden_app:\${PGWARDEN_UPSTREAM_PASSWORD}@127.0.0.1:\${PGWARDEN_UPSTREAM_PORT}/${database}`,
  };
}

/** What a {@link WireTap} saw a client send: Parse statement names and Bind result formats. */
export interface TapLog {
  readonly parses: { name: string; sql: string }[];
  readonly binds: { statement: string; resultFormats: number[] }[];
}

/** A TCP relay in front of the proxy that records the frontend messages passing through it. */
export interface WireTap {
  readonly port: number;
  readonly log: TapLog;
  close(): Promise<void>;
}

/** Starts a {@link WireTap} relaying 127.0.0.1:<port> ⇄ 127.0.0.1:`target`. */
export function startWireTap(target: number): Promise<WireTap> {
  const log: TapLog = { parses: [], binds: [] };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    sockets.add(client).add(upstream);
    const framer = new MessageFramer({ maxMessageBytes: 1 << 30, startup: true });
    client.on('data', (chunk: Buffer) => {
      for (const f of framer.push(chunk)) {
        if (f.code === FrontendCode.Parse) {
          const p = decodeParse(f.payload);
          log.parses.push({ name: p.name, sql: p.sql });
        } else if (f.code === FrontendCode.Bind) {
          const b = decodeBind(f.payload);
          log.binds.push({ statement: b.statement, resultFormats: [...b.resultFormats] });
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address() as net.AddressInfo;
      resolve({
        port: addr.port,
        log,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      });
    });
  });
}

/**
 * The demo config for the driver suites: alice additionally has `users.org_id` (int4) hidden, so
 * a masked column of a binary-transferable type shows that drivers decode it as text.
 */
export function driverConfig(extraDatabases: readonly string[] = []): Record<string, unknown> {
  const cfg = demoConfigObject();
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles.analyst?.permissions.push({
    effect: 'deny',
    actions: ['SEE'],
    database: 'demo',
    schema: 'public',
    table: 'users',
    column: 'org_id',
  });
  const dbs = cfg.databases as Record<string, unknown>;
  for (const d of extraDatabases) dbs[d] = upstreamEntry(d);
  return cfg;
}

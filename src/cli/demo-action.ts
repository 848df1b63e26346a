// `pgwarden demo` (npm start): an embedded PostgreSQL 15 with the demo database and its policy store, and the proxy on it.
import fs from 'node:fs';
import path from 'node:path';
import { makeLogger } from '../logger.js';
import { loadConfig } from '../policy/config-load.js';
import { serve } from './serve-run.js';

/** The demo config's listen address when `--listen` is not given. */
export const DEMO_LISTEN = '127.0.0.1:6432';
/** Where the demo serves the admin API and the web console when the port is free (else any free port). */
export const DEMO_ADMIN = '127.0.0.1:8432';

/** The options of `pgwarden demo`. */
export interface DemoOptions {
  /** Data directory of the embedded PostgreSQL. */
  data: string;
  json?: boolean;
  /** host:port instead of DEMO_LISTEN. */
  listen?: string;
  /** Where to record the ports in use (default: the demo config's env_file). */
  record?: string;
  /** host:port of the admin API and web console instead of DEMO_ADMIN (or any free port). */
  admin?: string;
}

/**
 * The action of `pgwarden demo`: starts the embedded PostgreSQL (port 6433 when free) in
 * `opts.data`, creates the demo database, seeds the demo policy store, runs the proxy
 * (serve-run.ts) and prints how to connect; records the ports in the env file while it runs.
 * Exits 1 when PostgreSQL, the policy store or the proxy does not start (PostgreSQL is stopped
 * first); the exits of `serve` apply.
 */
export async function demoAction(opts: DemoOptions): Promise<void> {
  const pretty = !opts.json;
  const logger = makeLogger({ pretty });
  // Imported here only: embedded-postgres hooks SIGHUP/SIGINT/SIGTERM to exit (async-exit-hook),
  // which `serve` must not inherit; the demo takes those signals back below.
  const { freePort, portIsFree, startEmbeddedPostgres } = await import('../embedded/postgres.js');
  const { DEMO_APP_PASSWORD, DEMO_DIR, ensureDemoDatabase } = await import('../embedded/demo.js');
  const dataDir = path.resolve(opts.data);
  fs.mkdirSync(path.dirname(dataDir), { recursive: true, mode: 0o755 });
  // 6433 when free, else (or when another process takes it first) a free port; whatever it is, it
  // is recorded below where the demo config reads it.
  let pg: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  try {
    pg = await startEmbeddedPostgres({ dataDir, persistent: true, preferredPort: 6433 });
  } catch (e) {
    process.stderr.write(
      `pgwarden demo: PostgreSQL did not start in ${dataDir}${e instanceof Error ? `: ${e.message}` : ''}\n` +
        'Is another `pgwarden demo` (npm start) using that data folder? Stop it, or pass --data <another folder>.\n',
    );
    process.exit(1);
  }
  const created = await ensureDemoDatabase(pg);
  logger.info(
    { event: 'embedded-postgres', port: pg.port, dataDir, created },
    'embedded PostgreSQL 15 ready',
  );
  for (const signal of ['SIGHUP', 'SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
  // Set here, so that a file recorded by an earlier run never decides this one.
  process.env.PGWARDEN_UPSTREAM_PORT = String(pg.port);
  process.env.PGWARDEN_UPSTREAM_PASSWORD = DEMO_APP_PASSWORD;
  process.env.PGWARDEN_LISTEN = opts.listen ?? DEMO_LISTEN;
  // The demo's policy lives in a policy store in the demo database (seeded from the demo YAML on
  // first start), so that the web console's edits reach the proxy, check and mcp.
  const { DEMO_AUDIT_FILE, DEMO_SEED_FILE, seedDemoStore, writeDemoStoreConfig } = await import(
    '../embedded/demo-store.js'
  );
  const envFile = opts.record
    ? path.resolve(opts.record)
    : path.resolve(DEMO_DIR, '../../.pgwarden/demo.env');
  const configFile = writeDemoStoreConfig(path.join(path.dirname(dataDir), 'demo.pgwarden.yaml'), envFile);
  try {
    const url = loadConfig(configFile, process.env, { needsUpstream: false }).config.policy_store as string;
    const seeded = await seedDemoStore(configFile, url);
    logger.info({ event: 'demo-policy-store', seeded, seed: DEMO_SEED_FILE }, 'demo policy store ready');
  } catch (e) {
    await pg.stop().catch(() => {});
    process.stderr.write(`pgwarden demo: the policy store did not start: ${(e as Error).message}\n`);
    process.exit(1);
  }
  const admin = opts.admin ?? ((await portIsFree(8432)) ? DEMO_ADMIN : `127.0.0.1:${await freePort()}`);
  let record: string | undefined;
  const { proxy, loaded, adminAddress } = await serve(configFile, logger, {
    pretty,
    admin,
    command: 'demo',
    how: 'Pass --listen 127.0.0.1:<port>.',
    onStop: async () => {
      if (record) fs.rmSync(record, { force: true });
      await pg.stop().catch(() => {});
    },
  }).catch(async (e: unknown) => {
    // Never leave the embedded PostgreSQL behind.
    await pg.stop().catch(() => {});
    process.stderr.write(`pgwarden demo: the proxy did not start: ${(e as Error).message}\n`);
    process.exit(1);
  });
  const { host, port } = proxy.address;
  record = opts.record
    ? path.resolve(opts.record)
    : loaded.config.env_file && path.resolve(path.dirname(loaded.file), loaded.config.env_file);
  if (record) {
    const { writeEnvFile } = await import('../policy/env-file.js');
    writeEnvFile(
      record,
      { PGWARDEN_UPSTREAM_PORT: String(pg.port), PGWARDEN_LISTEN: `${host}:${port}` },
      'Written by `pgwarden demo` (npm start) while it runs, removed when it stops: the ports it uses, for the demo config.',
    );
  }
  const bin = path.resolve(import.meta.dirname, '../../bin/pgwarden.js');
  process.stdout.write(
    [
      '',
      `pgwarden is listening on ${host}:${port} (demo database "demo"). Connect with:`,
      `  psql "postgres://alice:alice@${host}:${port}/demo"   # analyst: users.email, users.ssn, orgs.secret hidden`,
      `  psql "postgres://bob:bob@${host}:${port}/demo"       # support: reads and writes, same columns hidden`,
      `  psql "postgres://dba:dba@${host}:${port}/demo"       # dba: everything`,
      `  API key "agent" (role analyst), token agent-demo-token: PGWARDEN_API_KEY=agent-demo-token node ${bin} mcp --config ${configFile}`,
      `Its PostgreSQL listens on 127.0.0.1:${pg.port}${record ? `; \`pgwarden check\` and \`mcp\` with ${configFile} read it (and the policy store in it) from ${record}` : ''}.`,
      `Its policy is in the policy store of the demo database (schema pgwarden), seeded from ${DEMO_SEED_FILE}; \`pgwarden policy export --config ${configFile}\` shows it.`,
      `Audit lines are printed here and written to ${path.join(path.dirname(configFile), DEMO_AUDIT_FILE)} (the web console's audit page and Dry run read it).`,
      `Web console: http://${adminAddress?.host ?? '127.0.0.1'}:${adminAddress?.port ?? ''}/console/ (log in as dba / dba; a save goes live at once)`,
      'Ctrl-C stops the proxy and PostgreSQL.',
      '',
    ].join('\n'),
  );
}

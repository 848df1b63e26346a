// Runs the proxy for `serve` and `demo`: logs, audit, policy source, fleet, admin API, signals (SIGHUP reload, SIGINT/SIGTERM stop).
import path from 'node:path';
import type { Logger } from 'pino';
import { wireConsole } from '../admin/wire-console.js';
import { upstreamLoginWarnings } from '../catalog/upstream-login.js';
import { makeAuditLogger, makeFileLogger } from '../logger.js';
import { type LoadedConfig, loadConfig } from '../policy/config-load.js';
import { configEpoch } from '../policy/policy-document.js';
import { wallsIntact } from '../policy/wall-switches.js';
import type { ProxyServer } from '../proxy/proxy-port.js';
import { startProxy } from '../proxy/server.js';
import type { WorkerRole } from '../proxy/workers.js';
import { EXIT_CONFIG, loadOrExit } from './command-outcome.js';
import { logFileOf, openLogOrExit } from './log-files.js';
import { servePolicy } from './serve-policy.js';

/** The fleet wiring of `serve` (src/proxy/fleet.ts); exits 1 with the store's message when it cannot be joined. */
async function joinFleetOrExit(instance: LoadedConfig, logger: Logger, worker: WorkerRole | undefined) {
  const { joinFleet } = await import('../proxy/fleet.js');
  try {
    return await joinFleet(instance.config, logger, worker?.fleet ?? { role: 'instance' });
  } catch (e) {
    process.stderr.write(`pgwarden serve: ${(e as Error).message}\n`);
    process.exit(1);
  }
}

/** The hint for a listen address that cannot be bound; `how` says how to choose another. */
function listenHint(e: unknown, listen: string, how: string): string | undefined {
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE')
    return `cannot listen on ${listen}: the port is taken (another pgwarden, or npm start?). ${how}`;
  if (code === 'EACCES') return `cannot listen on ${listen}: permission denied. ${how}`;
  return undefined;
}

/** How `serve` runs: for `pgwarden serve`, a worker of `serve --workers`, or `pgwarden demo`. */
export interface ServeOptions {
  pretty?: boolean | undefined;
  /** The command named in messages (`serve`, `demo`). */
  command: string;
  /** How to choose another listen address, appended to the hint for one that cannot be bound. */
  how: string;
  /** Runs last when the proxy stops (the demo stops its embedded PostgreSQL). */
  onStop?: () => Promise<void>;
  /** host:port of the admin API and web console; none without. */
  admin?: string;
  /** Set in a worker of `serve --workers` (src/proxy/workers.ts). */
  worker?: WorkerRole;
}

/**
 * Runs the proxy on the config `file` until SIGINT/SIGTERM (graceful: sessions drain, then the
 * admin listener, fleet, policy source and logs close; exit 0) and reloads the config on SIGHUP
 * (an invalid file is logged as `reload-failed` and the old one stays). Resolves to the running
 * proxy, the config it started from and the admin API's address when `opts.admin` is given.
 * Exits 2 when a wall is switched off (test build), the config cannot be used, a log or audit
 * file cannot be opened, or the listen address cannot be bound (`listenHint`); exits 1 when the
 * policy store or the fleet cannot be reached, or the proxy does not start (its message on
 * stderr, e.g. a managed database's administration login without CREATEROLE); other start-up
 * errors are thrown.
 */
export async function serve(
  file: string,
  stderrLogger: Logger,
  opts: ServeOptions,
): Promise<{ proxy: ProxyServer; loaded: LoadedConfig; adminAddress?: { host: string; port: number } }> {
  if (!wallsIntact()) {
    // Only a test can turn a wall off (wall-switches.ts); a proxy never runs so.
    process.stderr.write('pgwarden serve: a wall is switched off (test build); refusing to start\n');
    process.exit(EXIT_CONFIG);
  }
  const instance = loadOrExit(file, undefined);
  // With `log.file`, the process log goes there (JSON lines; SIGHUP reopens it).
  const logFile = logFileOf(instance.config.log, instance.file);
  const fileLogger = logFile
    ? openLogOrExit(opts.command, 'log.file', logFile.file, () => makeFileLogger(logFile))
    : undefined;
  const logger = fileLogger
    ? opts.worker
      ? fileLogger.logger.child({ worker: opts.worker.index })
      : fileLogger.logger
    : stderrLogger;
  for (const w of instance.warnings) logger.warn({ event: 'config-warning' }, w);
  for (const w of await upstreamLoginWarnings(instance.config.databases, path.dirname(instance.file)))
    logger.warn({ event: 'upstream-login' }, w);
  const auditFile = logFileOf(instance.config.audit, instance.file);
  const audit = openLogOrExit(opts.command, 'audit.file', auditFile?.file ?? '', () =>
    makeAuditLogger(auditFile, { pretty: opts.pretty }),
  );
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
    // A listen address that cannot be bound (exit 2), or a database the proxy cannot serve (exit
    // 1: a managed database's administration login lacking a privilege, whose message says which).
    const hint = listenHint(e, instance.config.listen, opts.how);
    await fleet.close();
    await source?.close();
    await opts.onStop?.();
    audit.close();
    process.stderr.write(`pgwarden ${opts.command}: ${hint ?? (e as Error).message}\n`);
    process.exit(hint ? EXIT_CONFIG : 1);
  }
  const running = proxy;
  await fleet.listening(running.address);
  opts.worker?.ready(running, fleet);
  // A change committed while the proxy was starting.
  if (source && configEpoch(source.loaded.config) !== running.epoch()) running.reload(source.loaded);
  const admin = opts.admin
    ? await (await import('../admin/admin-server.js')).startAdmin({
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

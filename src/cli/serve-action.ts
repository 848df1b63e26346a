// `pgwarden serve`: one proxy process, or with --workers N a node:cluster primary and its workers.
import { makeFileLogger, makeLogger } from '../logger.js';
import { EXIT_CONFIG, loadOrExit } from './command-outcome.js';
import { logFileOf, openLogOrExit } from './log-files.js';
import { serve } from './serve-run.js';

/** The options of `pgwarden serve` (commander's: `--workers` as typed). */
export interface ServeCommandOptions {
  config: string;
  pretty?: boolean;
  admin?: string;
  workers: string;
}

/**
 * The action of `pgwarden serve`: with `--workers 1` runs the proxy here (serve-run.ts); with
 * more, the primary (src/proxy/workers.ts, logging where its workers do) or, in a worker, the
 * proxy with the worker's role (the first worker serves `--admin`). A `--workers` that is not an
 * integer from 1 to MAX_WORKERS exits 2; the exits of `serve` apply.
 */
export async function serveAction(opts: ServeCommandOptions): Promise<void> {
  const workers = Number(opts.workers);
  const logger = makeLogger({ pretty: opts.pretty });
  const { MAX_WORKERS, runPrimary, workerRole } = await import('../proxy/workers.js');
  if (!Number.isInteger(workers) || workers < 1 || workers > MAX_WORKERS) {
    process.stderr.write(`pgwarden serve: --workers must be an integer from 1 to ${MAX_WORKERS}\n`);
    process.exit(EXIT_CONFIG);
  }
  const role = workers > 1 ? workerRole() : undefined;
  if (workers > 1 && !role) {
    // The primary logs where its workers do (log.file, reopened on SIGHUP as theirs are).
    const config = loadOrExit(opts.config, undefined);
    const logFile = logFileOf(config.config.log, config.file);
    const fileLogger = logFile
      ? openLogOrExit('serve', 'log.file', logFile.file, () => makeFileLogger(logFile))
      : undefined;
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
}

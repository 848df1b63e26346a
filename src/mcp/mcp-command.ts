// The `pgwarden mcp` command's life cycle: start, SIGHUP reload, stop on a signal or when the stdio client leaves.
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import { API_KEY_ENV, McpStartError, startMcpServer } from './mcp-server.js';

/** Exit code when `pgwarden mcp` cannot start for want of a usable key (the same as a bad config). */
export const EXIT_NO_KEY = 2;

function packageVersion(): string {
  try {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version?: unknown;
    };
    return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** Options of {@link runMcpCommand}. */
export interface McpCommandOptions {
  /** `host:port` for Streamable HTTP; stdio when absent. */
  readonly http?: string;
  /**
   * Re-reads the config file, and with `policy_store` the store (SIGHUP); rejects (ConfigError, the
   * store unreachable), which is logged and ignored.
   */
  readonly reloadConfig: () => LoadedConfig | Promise<LoadedConfig>;
  /** Where audit lines go (config `audit.file`); the main logger without. */
  readonly auditLogger?: Logger;
  /** Runs on SIGHUP before the reload: `log.file` and `audit.file` opened again (logrotate). */
  readonly reopenLogs?: () => void;
  /** Runs last before the exit: buffered audit and log lines written. */
  readonly closeLogs?: () => void;
}

/**
 * Runs `pgwarden mcp` until SIGINT/SIGTERM, or (stdio) until the client closes stdin; then closes the
 * HTTP listener, the pools and the internal proxy and exits 0. Returns `reload`, which applies a new
 * config (what the policy store's NOTIFY delivers). SIGHUP reloads the config (a revoked
 * key stops working at once; an invalid file is logged and the old config stays) after reopening the
 * log files. A missing or invalid `PGWARDEN_API_KEY` on stdio is printed to stderr and exits
 * {@link EXIT_NO_KEY}. Logs go to `logger` (stderr or `log.file`: stdout is the MCP channel on
 * stdio), audit lines to `opts.auditLogger`.
 */
export async function runMcpCommand(
  loaded: LoadedConfig,
  logger: Logger,
  opts: McpCommandOptions,
): Promise<{ reload(next: LoadedConfig): Promise<void> }> {
  let running: Awaited<ReturnType<typeof startMcpServer>>;
  try {
    running = await startMcpServer(loaded, logger, {
      ...(opts.http !== undefined ? { http: opts.http } : {}),
      ...(process.env[API_KEY_ENV] !== undefined ? { apiKey: process.env[API_KEY_ENV] } : {}),
      version: packageVersion(),
      ...(opts.auditLogger ? { auditLogger: opts.auditLogger } : {}),
    });
  } catch (e) {
    if (e instanceof McpStartError) {
      process.stderr.write(`pgwarden mcp: ${e.message}\n`);
      process.exit(EXIT_NO_KEY);
    }
    throw e;
  }
  const reload = async (next: LoadedConfig) => {
    await running.reload(next);
    logger.info({ event: 'reload' }, 'configuration reloaded');
  };
  process.on('SIGHUP', async () => {
    opts.reopenLogs?.();
    try {
      await reload(await opts.reloadConfig());
    } catch (e) {
      logger.error(
        { event: 'reload-failed', err: (e as Error).message },
        'new configuration is invalid; the old one stays in force',
      );
    }
  });
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', reason: why }, 'shutting down');
    await running.close();
    opts.closeLogs?.();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  void running.ended.then(() => stop('stdin closed'));
  return { reload };
}

// `pgwarden mcp`: the config (and policy store) loaded and kept current, handed to src/mcp/mcp-command.ts.
import { makeAuditLogger, makeFileLogger, makeLogger } from '../logger.js';
import { ConfigError, type LoadedConfig, loadConfig } from '../policy/config-load.js';
import { configEpoch } from '../policy/policy-document.js';
import { EXIT_CONFIG } from './command-outcome.js';
import { logFileOf, openLogOrExit } from './log-files.js';
import { servePolicy } from './serve-policy.js';

/**
 * The action of `pgwarden mcp`: loads the config (exit 2 with `pgwarden mcp: <message>` when it
 * cannot be used), with `policy_store` the store's policy and API keys kept current by NOTIFY as
 * `serve` keeps them (exit 1 when the store cannot be reached), and runs the MCP server on stdio
 * or `opts.http` (runMcpCommand). A change that arrives while the server starts is applied once it
 * runs (epochs compared, as `serve` does). With `audit.file`, the audit lines (each statement's, each
 * tool call's) go there, and with `log.file` the process log, as `serve` writes them (exit 2 when
 * one cannot be opened; SIGHUP reopens both; flushed at exit); stderr without.
 */
export async function mcpAction(opts: { config: string; http?: string }): Promise<void> {
  // Batched: the proxy's audit line per statement and the tools' lines go to this one log, in order.
  let logger = makeLogger({ batched: true });
  const { runMcpCommand } = await import('../mcp/mcp-command.js');
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
  const logFile = logFileOf(instance.config.log, instance.file);
  const fileLogger = logFile
    ? openLogOrExit('mcp', 'log.file', logFile.file, () => makeFileLogger(logFile))
    : undefined;
  if (fileLogger) logger = fileLogger.logger;
  const auditFile = logFileOf(instance.config.audit, instance.file);
  const audit = auditFile
    ? openLogOrExit('mcp', 'audit.file', auditFile.file, () => makeAuditLogger(auditFile))
    : undefined;
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
    ...(audit ? { auditLogger: audit.logger } : {}),
    reopenLogs: () => {
      fileLogger?.file.reopen();
      audit?.reopen();
    },
    closeLogs: () => audit?.close(),
    reloadConfig: () => {
      const next = loadConfig(opts.config);
      return source ? source.setInstance(next) : next;
    },
  });
  // A change that arrived while the server started (`loaded` is a fresh merge on every read, so
  // compare epochs, as `serve` does).
  if (source && configEpoch(source.loaded.config) !== startedEpoch) await mcp.reload(source.loaded);
}

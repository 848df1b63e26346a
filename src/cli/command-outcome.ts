// How a pgwarden command ends: the config-error exit code, a config loaded or exit 2, a command's output and exit code.
import type { Logger } from 'pino';
import { ConfigError, type LoadedConfig, loadConfig } from '../policy/config-load.js';

/** Exit code for a configuration that cannot be used (also a listen address that cannot be bound). */
export const EXIT_CONFIG = 2;

/**
 * The config of `file` (src/policy/config-load.ts), its warnings logged to `logger` as
 * `config-warning` (none without one). A ConfigError prints its message on stderr and exits 2
 * (EXIT_CONFIG); any other error is thrown.
 */
export function loadOrExit(file: string, logger: Logger | undefined): LoadedConfig {
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

/** Whether to colour output: on a terminal only, and never with NO_COLOR set (https://no-color.org). */
export const colour = (): boolean => process.stdout.isTTY === true && !process.env.NO_COLOR;

/**
 * Prints a command's outcome (`stdout`, `stderr`: text as is) and sets `process.exitCode` to
 * `exitCode`; the logic that computed it lives in src/policy. Throws nothing.
 */
export function finish(out: { exitCode: number; stdout: string; stderr: string }): void {
  process.stdout.write(out.stdout);
  process.stderr.write(out.stderr);
  process.exitCode = out.exitCode;
}

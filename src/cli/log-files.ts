// The config's `log` and `audit` files for `serve`, `demo` and `mcp`: their paths, and their opening or exit 2.
import path from 'node:path';
import type { LogFileOptions } from '../log-file.js';
import { EXIT_CONFIG } from './command-outcome.js';

/**
 * A log's file options (config `log` / `audit`: `file`, `max_size_bytes`, `keep`), its path
 * resolved against the folder of `configFile`; undefined when the log goes to stderr. Throws nothing.
 */
export function logFileOf(
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

/**
 * Runs `open` (a log file's opening: `log.file`, `audit.file`) and returns what it returns; when
 * the file cannot be opened (a folder that cannot be made, no write permission) prints `pgwarden
 * <command>: cannot open <key> <path>: <error>` and exits 2 (EXIT_CONFIG): lines that could not be
 * written must not be lost silently. Other errors are thrown.
 */
export function openLogOrExit<T>(command: string, key: string, file: string, open: () => T): T {
  try {
    return open();
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (typeof err.code !== 'string') throw e;
    process.stderr.write(`pgwarden ${command}: cannot open ${key} ${file}: ${err.message}\n`);
    process.exit(EXIT_CONFIG);
  }
}

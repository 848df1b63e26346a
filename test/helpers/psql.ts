// Runs the real psql 15 client against a URL and returns what it printed.
import { type RunResult, run } from './run-program.js';

/**
 * Runs `psql -X -v ON_ERROR_STOP=1 <url> <args…>` with `input` on stdin (PGCONNECT_TIMEOUT=10,
 * PGSSLMODE prefer unless set); resolves with its exit status and output when psql exits (killed
 * after `timeoutMs`). psql must be installed (.ci/run installs postgresql-client-15).
 */
export function psql(
  url: string,
  args: readonly string[],
  input = '',
  timeoutMs = 20_000,
): Promise<RunResult> {
  return run('psql', ['-X', '-v', 'ON_ERROR_STOP=1', url, ...args], {
    input,
    env: { PGCONNECT_TIMEOUT: '10', PGSSLMODE: process.env.PGSSLMODE ?? 'prefer' },
    timeoutMs,
  });
}

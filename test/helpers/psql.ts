// Runs the real psql 15 client against a URL and returns what it printed.
import { spawn } from 'node:child_process';

/** psql's exit status and output streams. */
export interface PsqlResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `psql -X -v ON_ERROR_STOP=1 <url> <args…>` with `input` on stdin; resolves when psql
 * exits (killed after `timeoutMs`). psql must be installed (.ci/run installs postgresql-client-15).
 */
export function psql(
  url: string,
  args: readonly string[],
  input = '',
  timeoutMs = 20_000,
): Promise<PsqlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('psql', ['-X', '-v', 'ON_ERROR_STOP=1', url, ...args], {
      env: { ...process.env, PGCONNECT_TIMEOUT: '10', PGSSLMODE: process.env.PGSSLMODE ?? 'prefer' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

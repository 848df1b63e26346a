// Runs an external program (psql, pgcli, pg_dump, python3, …) with input on stdin and collects what it printed.
import { spawn } from 'node:child_process';

/** An external program's exit status (-1 when killed by a signal) and output. */
export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `cmd args…` with `input` on stdin (the environment: this process's with `env` over it);
 * resolves when it exits, SIGKILLed after `timeoutMs` (default 60 s); rejects when it cannot be
 * started. With `holdStdinMs`, stdin stays open that long after `input` is written (an
 * interactive program that reads a pipe, such as pgcli, gets time to work before its EOF).
 */
export function run(
  cmd: string,
  args: readonly string[],
  opts: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; holdStdinMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...opts.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    if (opts.holdStdinMs === undefined) child.stdin.end(opts.input ?? '');
    else {
      child.stdin.write(opts.input ?? '');
      setTimeout(() => child.stdin.end(), opts.holdStdinMs);
    }
  });
}

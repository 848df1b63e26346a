// Child processes for the benchmark: spawn, wait for a port, read CPU ticks and RSS from /proc, stop.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

/** Kernel clock ticks per second (utime/stime unit in /proc/<pid>/stat). */
export const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time (user + system, all threads) a process has used so far, in nanoseconds: the sum of its
 * threads' `/proc/<pid>/task/<tid>/schedstat` run time (ns resolution), else `/proc/<pid>/stat`'s
 * utime + stime (clock ticks, 10 ms). A short run of a few hundred transactions needs the first.
 */
export function cpuNs(pid: number): number {
  try {
    let ns = 0;
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    }
    if (ns > 0) return ns;
  } catch {
    // no schedstat (kernel without CONFIG_SCHEDSTATS): clock ticks below
  }
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the `(comm)`: state is field 3, utime 14, stime 15 (1-based).
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(rest[11]) + Number(rest[12]);
  return (ticks * 1e9) / CLK_TCK;
}

/**
 * CPU time (ns) each thread of a process has used so far, summed by thread name
 * (`main` the main thread, else `/proc/<pid>/task/<tid>/comm`: in Node 20 V8's GC and compiler
 * helpers and libuv's thread pool are all `node`); empty without schedstat.
 */
export function cpuNsByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      const name =
        tid === String(pid) ? 'main' : fs.readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const ns = Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      out.set(name, (out.get(name) ?? 0) + ns);
    }
  } catch {
    // a thread ended while read, or no schedstat: what was read so far
  }
  return out;
}

/** Resident set size of a process, in kilobytes. */
export function rssKb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) : Number.NaN;
}

/** Resolves once `port` on 127.0.0.1 accepts a TCP connection; rejects after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A spawned helper process. */
export interface Child {
  readonly pid: number;
  readonly proc: ChildProcess;
  /** Sends SIGTERM and resolves when the process has exited (SIGKILL after 5 s). */
  stop(): Promise<void>;
}

/** Options of {@link spawnChild}. */
export interface SpawnOptions {
  /** File that receives the child's stdout and stderr (its logs). */
  readonly logFile: string;
  /** Open an IPC channel (for proxy-process.ts's stats). */
  readonly ipc?: boolean;
  readonly uid?: number;
  readonly gid?: number;
  readonly cwd?: string;
}

/** Spawns `cmd args` with its output going to `logFile`. */
export function spawnChild(cmd: string, args: readonly string[], opts: SpawnOptions): Child {
  const fd = fs.openSync(opts.logFile, 'a');
  const proc = spawn(cmd, args, {
    stdio: opts.ipc ? ['ignore', fd, fd, 'ipc'] : ['ignore', fd, fd],
    ...(opts.uid !== undefined ? { uid: opts.uid } : {}),
    ...(opts.gid !== undefined ? { gid: opts.gid } : {}),
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
  });
  fs.closeSync(fd);
  if (proc.pid === undefined) throw new Error(`could not spawn ${cmd}`);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    pid: proc.pid,
    proc,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Sends `request` over the child's IPC channel and resolves with its first object reply. */
export async function ask<T>(child: Child, request: string): Promise<T> {
  return await new Promise<T>((resolve, reject) => {
    const onMessage = (m: unknown) => {
      if (typeof m === 'object' && m !== null) {
        child.proc.off('message', onMessage);
        resolve(m as T);
      }
    };
    child.proc.on('message', onMessage);
    if (!child.proc.send?.(request)) reject(new Error('no IPC channel'));
  });
}

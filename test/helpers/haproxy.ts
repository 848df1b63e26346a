// HAProxy (Debian's /usr/sbin/haproxy) in front of pgwarden instances: the configuration docs/deploy.md shows, run in the foreground.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** One backend: the instance's listen port and its admin port (the health check's). */
export interface HaproxyServer {
  readonly name: string;
  /** Default 127.0.0.1. */
  readonly host?: string;
  readonly port: number;
  readonly adminPort: number;
}

/**
 * The HAProxy configuration of docs/deploy.md ("HAProxy"): TCP mode, `leastconn` over the
 * instances, an HTTP health check of each instance's admin `check` path every `inter` ms (a
 * failing one is drained: no new connections), and `redispatch` so that a connection refused by
 * a dead instance is retried on another.
 */
export function haproxyConfig(opts: {
  readonly bind: string;
  readonly servers: readonly HaproxyServer[];
  readonly check?: string;
  readonly interMs?: number;
  readonly balance?: 'leastconn' | 'roundrobin';
}): string {
  const inter = opts.interMs ?? 500;
  return [
    'global',
    '    maxconn 4096',
    'defaults',
    '    mode tcp',
    '    timeout connect 2s',
    '    timeout client 1h',
    '    timeout server 1h',
    '    timeout check 3s',
    '    option redispatch 1',
    '    retries 2',
    'frontend pgwarden',
    `    bind ${opts.bind}`,
    '    default_backend pgwarden',
    'backend pgwarden',
    `    balance ${opts.balance ?? 'leastconn'}`,
    `    option httpchk GET ${opts.check ?? '/readyz'}`,
    '    http-check expect status 200',
    `    default-server inter ${inter}ms fall 2 rise 2`,
    ...opts.servers.map(
      (s) => `    server ${s.name} ${s.host ?? '127.0.0.1'}:${s.port} check port ${s.adminPort}`,
    ),
    '',
  ].join('\n');
}

/** A running HAProxy: its child, and stop(). */
export interface Haproxy {
  readonly child: ChildProcess;
  readonly output: string[];
  stop(): Promise<void>;
}

/** Writes `config` into `dir` and runs `haproxy -db -f` (foreground); resolves once `port` accepts connections. */
export async function startHaproxy(dir: string, config: string, port: number): Promise<Haproxy> {
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, config);
  const check = spawnSyncCheck(file);
  if (check) throw new Error(check);
  const child = spawn('/usr/sbin/haproxy', ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout?.on('data', (d: Buffer) => output.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => output.push(d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const deadline = Date.now() + 15_000;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        r(true);
      });
      s.on('error', () => r(false));
    });
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`haproxy did not start: ${output.join('')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** `haproxy -c -f file`: undefined when the configuration is valid, else HAProxy's message. */
function spawnSyncCheck(file: string): string | undefined {
  const r = spawnSync('/usr/sbin/haproxy', ['-c', '-q', '-f', file], { encoding: 'utf8' });
  return r.status === 0 ? undefined : `invalid haproxy configuration: ${r.stderr}${r.stdout}`;
}

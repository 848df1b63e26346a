// Opens many idle authenticated clients against a proxy process and measures the time to accept them and its RSS.
import pg from 'pg';
import type { Endpoint } from './pgbench.js';
import { cpuNs, rssKb } from './procs.js';
import { median } from './stats.js';

/** What the connection test measured. */
export interface ConnectionResults {
  readonly clients: number;
  readonly concurrency: number;
  /** Wall time from the first connect to the last ready client. */
  readonly acceptSeconds: number;
  /** Median time of one connect (TCP, startup, SCRAM, upstream session), ms. */
  readonly connectMedianMs: number;
  readonly rssBaseKb: number;
  readonly rssLoadedKb: number;
  readonly kbPerConnection: number;
  /**
   * The proxy process's CPU (user + system) while the clients connected, divided by their number,
   * ms: one login each (client SCRAM exchange, upstream connection and its login, role resolution).
   */
  readonly cpuMsPerLogin: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function connect(e: Endpoint): Promise<pg.Client> {
  const c = new pg.Client({
    host: e.host,
    port: e.port,
    user: e.user,
    password: e.password,
    database: e.database,
  });
  c.on('error', () => {});
  await c.connect();
  return c;
}

/**
 * Warms the proxy (one client: parser, catalog, verifier), reads its RSS, opens `count` clients
 * with `concurrency` connects in flight, waits for the process to settle, reads its RSS again,
 * then closes them all.
 */
export async function benchConnections(
  pid: number,
  e: Endpoint,
  count: number,
  concurrency: number,
): Promise<ConnectionResults> {
  const warm = await connect(e);
  await warm.query('SELECT 1');
  await warm.end();
  await sleep(1000);
  const rssBaseKb = rssKb(pid);
  const clients: pg.Client[] = [];
  const times: number[] = [];
  let next = 0;
  const t0 = performance.now();
  const cpu0 = cpuNs(pid);
  const worker = async () => {
    while (next < count) {
      next++;
      const s = performance.now();
      clients.push(await connect(e));
      times.push(performance.now() - s);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    const acceptSeconds = (performance.now() - t0) / 1000;
    const cpuMsPerLogin = (cpuNs(pid) - cpu0) / 1e6 / clients.length;
    await sleep(2000);
    const rssLoadedKb = rssKb(pid);
    return {
      clients: clients.length,
      concurrency,
      acceptSeconds,
      connectMedianMs: median(times),
      rssBaseKb,
      rssLoadedKb,
      kbPerConnection: (rssLoadedKb - rssBaseKb) / clients.length,
      cpuMsPerLogin,
    };
  } finally {
    await Promise.all(clients.map((c) => c.end().catch(() => {})));
  }
}

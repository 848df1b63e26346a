// `serve --workers N`: a primary forks N workers (node:cluster) that share the listening socket, holds the fleet row for them, and routes cancels between them.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { clusterExposition, offerWorkerMetrics } from '../ops/cluster-metrics.js';
import type { LoadedConfig } from '../policy/config-load.js';
import { MAX_WORKER } from './cancel-key.js';
import { type Fleet, joinFleet } from './fleet.js';
import type { ProxyServer } from './proxy-port.js';

/** Most workers `--workers` takes (cancel-key.ts keeps 5 bits of the process ID for the worker). */
export const MAX_WORKERS = MAX_WORKER + 1;

/** Messages between the primary and its workers (`pgwarden` tells them from other IPC). */
type WorkerMessage =
  | { pgwarden: 'cancel'; worker?: number; processId: number; secretKey: number }
  | { pgwarden: 'slot'; slot: number }
  | { pgwarden: 'listening'; host: string; port: number }
  /** Worker → primary: the console's RELOAD ran here; reload the others (SIGHUP). */
  | { pgwarden: 'reload-others' }
  /** Worker → primary: the merged metrics, please; primary → worker: them (or why not). */
  | { pgwarden: 'metrics'; id: number; contentType?: string; body?: string; error?: string };

/** How long a worker waits for the primary's merged metrics (ms): prom-client's own 5 s wait, and a margin. */
const METRICS_WAIT_MS = 6000;

function isWorkerMessage(m: unknown): m is WorkerMessage {
  return typeof m === 'object' && m !== null && typeof (m as { pgwarden?: unknown }).pgwarden === 'string';
}

/** What a worker process is told by its primary, and how it hooks its proxy into the primary. */
export interface WorkerRole {
  /** 0 … N−1: stamped on the cancel keys it issues, and on its log lines (`worker`). */
  readonly index: number;
  /** Its fleet options: the primary's slot; a sibling's key is handed to the primary. */
  readonly fleet: {
    readonly role: 'worker';
    readonly worker: number;
    readonly slot: number;
    readonly toWorker: (worker: number, processId: number, secretKey: number) => boolean;
  };
  /** Called once the proxy listens: serves the cancels the primary hands over, tells it the bound port. */
  ready(proxy: ProxyServer, fleet: Fleet): void;
  /**
   * The Prometheus text of every worker's metrics merged (the primary's `AggregatorRegistry`), for
   * `/metrics` of the admin API the first worker serves. Rejects when the primary does not answer
   * within 6 s or a worker did not answer it.
   */
  metrics(): Promise<{ contentType: string; body: string }>;
  /** The wire console's RELOAD, done in this worker: the primary sends SIGHUP to the other workers. */
  reloadOthers(): void;
  /** The wire console's SHUTDOWN: SIGTERM to the primary, which stops every worker gracefully. */
  shutdownAll(): void;
}

/** The role of this process when it is a worker of `serve --workers` (undefined in the primary). */
export function workerRole(): WorkerRole | undefined {
  if (!cluster.isWorker) return undefined;
  const index = Number(process.env.PGWARDEN_WORKER ?? 0);
  const workers = Number(process.env.PGWARDEN_WORKERS ?? 1);
  const send = (m: WorkerMessage) => process.send?.(m);
  void offerWorkerMetrics();
  const asked = new Map<number, (m: Extract<WorkerMessage, { pgwarden: 'metrics' }>) => void>();
  let nextId = 0;
  process.on('message', (m: unknown) => {
    if (isWorkerMessage(m) && m.pgwarden === 'metrics') asked.get(m.id)?.(m);
  });
  return {
    index,
    fleet: {
      role: 'worker',
      worker: index,
      slot: Number(process.env.PGWARDEN_FLEET_SLOT ?? 0),
      toWorker: (worker, processId, secretKey) => {
        if (worker >= workers) return false;
        send({ pgwarden: 'cancel', worker, processId, secretKey });
        return true;
      },
    },
    ready(proxy, fleet) {
      process.on('message', (m: unknown) => {
        if (!isWorkerMessage(m)) return;
        if (m.pgwarden === 'cancel') void proxy.cancelHere(m.processId, m.secretKey);
        else if (m.pgwarden === 'slot') fleet.setSlot(m.slot);
      });
      send({ pgwarden: 'listening', ...proxy.address });
    },
    reloadOthers: () => send({ pgwarden: 'reload-others' }),
    shutdownAll: () => process.kill(process.ppid, 'SIGTERM'),
    metrics() {
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          asked.delete(id);
          reject(new Error('the primary did not send the merged metrics in time'));
        }, METRICS_WAIT_MS);
        asked.set(id, (m) => {
          clearTimeout(timer);
          asked.delete(id);
          if (m.body !== undefined && m.contentType !== undefined)
            resolve({ contentType: m.contentType, body: m.body });
          else reject(new Error(`the workers' metrics could not be merged: ${m.error ?? 'no answer'}`));
        });
        send({ pgwarden: 'metrics', id });
      });
    },
  };
}

/** How long a worker that died waits before it is started again (ms). */
const RESTART_MS = 1000;

/**
 * The primary of `serve --workers N` (issue 21, "Multi-core on one machine"): joins the fleet for
 * all its workers (one row, one slot: the workers' keys differ in their worker bits), forks N
 * workers running `serve` with the same arguments, hands a CancelRequest for a sibling's key to
 * that worker, answers a worker's request for every worker's metrics merged (`/metrics`), forwards SIGHUP to every worker and stops them all on SIGTERM/SIGINT (each shuts
 * down gracefully). A worker that dies after it listened is started again after 1 s (its clients
 * lost their sessions); one that exits before it ever listened (a bad config, a port taken) stops
 * the whole process with its exit code. Resolves never; the process exits.
 */
export async function runPrimary(opts: {
  readonly config: LoadedConfig;
  readonly workers: number;
  readonly logger: Logger;
}): Promise<void> {
  const { logger, workers } = opts;
  const byIndex = new Map<number, Worker>();
  const listened = new Set<number>();
  let stopping = false;
  let fleet: Fleet;
  try {
    fleet = await joinFleet(opts.config.config, logger, {
      role: 'instance',
      workers,
      onSlot: (slot) => {
        for (const w of byIndex.values()) w.send({ pgwarden: 'slot', slot } satisfies WorkerMessage);
      },
    });
  } catch (e) {
    process.stderr.write(`pgwarden serve: ${(e as Error).message}\n`);
    process.exit(1);
  }
  const stop = async (signal: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info({ event: 'shutdown', signal, workers: byIndex.size }, 'stopping the workers');
    const exits = [...byIndex.values()].map(
      (w) => new Promise<void>((r) => (w.isDead() ? r() : w.once('exit', () => r()))),
    );
    for (const w of byIndex.values())
      w.process.kill(signal === 'exit' ? 'SIGTERM' : (signal as NodeJS.Signals));
    await Promise.all(exits);
    await fleet.close();
    process.exit(code);
  };
  const fork = (index: number) => {
    const w = cluster.fork({
      PGWARDEN_WORKER: String(index),
      PGWARDEN_WORKERS: String(workers),
      PGWARDEN_FLEET_SLOT: String(fleet.owner().slot),
    });
    byIndex.set(index, w);
    w.on('message', (m: unknown) => {
      if (!isWorkerMessage(m)) return;
      if (m.pgwarden === 'cancel' && m.worker !== undefined)
        byIndex.get(m.worker)?.send({ pgwarden: 'cancel', processId: m.processId, secretKey: m.secretKey });
      else if (m.pgwarden === 'reload-others') {
        for (const [i, other] of byIndex) if (i !== index) other.process.kill('SIGHUP');
      } else if (m.pgwarden === 'metrics')
        clusterExposition().then(
          (e) => w.send({ pgwarden: 'metrics', id: m.id, ...e } satisfies WorkerMessage),
          (e: unknown) =>
            w.send({ pgwarden: 'metrics', id: m.id, error: (e as Error).message } satisfies WorkerMessage),
        );
      else if (m.pgwarden === 'listening') {
        listened.add(index);
        void fleet.listening(m);
      }
    });
    w.on('exit', (code, signal) => {
      if (byIndex.get(index) === w) byIndex.delete(index);
      if (stopping) return;
      if (!listened.has(index)) {
        logger.error({ event: 'worker-failed', worker: index, code, signal }, 'a worker failed to start');
        void stop('exit', code ?? 1);
        return;
      }
      logger.error({ event: 'worker-exit', worker: index, code, signal }, 'a worker died; starting it again');
      setTimeout(() => {
        if (!stopping) fork(index);
      }, RESTART_MS);
    });
  };
  for (let i = 0; i < workers; i++) fork(i);
  process.on('SIGHUP', () => {
    for (const w of byIndex.values()) w.process.kill('SIGHUP');
  });
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  logger.info({ event: 'workers', workers, slot: fleet.owner().slot }, 'serving with worker processes');
}

// Operations routes of the admin listener: /healthz (alive), /readyz (ready to serve), /metrics (Prometheus).
import type { FastifyInstance } from 'fastify';
import { metricsRegistry } from '../ops/metrics.js';
import type { PolicySource } from '../policy/policy-source.js';
import type { ProxyServer } from '../proxy/proxy-port.js';

/** How long `/readyz` waits for each database's catalog connection to answer (ms). */
const PROBE_TIMEOUT_MS = 2000;

/** One readiness check: its name (`catalog:<database>`, `upstream:<database>`, `policy`), whether it holds, why not. */
export interface ReadyCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly error?: string;
}

/** The exposition `/metrics` serves: a Prometheus text body and its content type. */
export type MetricsExposition = () => Promise<{ contentType: string; body: string }>;

/** The exposition of this process's registry (ops/metrics.ts). */
export const processMetrics: MetricsExposition = async () => {
  const r = await metricsRegistry();
  return { contentType: r.contentType, body: await r.metrics() };
};

/**
 * The instance's own checks (ProxyServer.readiness()): `policy-lag` fails once the policy in force
 * has gone unconfirmed by the store for longer than `fleet.max_policy_lag_ms` (statements are then
 * refused with 57P03, issue 21 "Fleet consistency"); `accepting` fails once it is shutting down,
 * so that a balancer drains it during the grace period. The store's own error text is not
 * repeated here (it may name the store's address; the `policy-stale` log line has it).
 */
export function instanceChecks(proxy: ProxyServer): ReadyCheck[] {
  const r = proxy.readiness();
  const c = r.policy;
  return [
    c === undefined || c.current
      ? { name: 'policy-lag', ok: true }
      : {
          name: 'policy-lag',
          ok: false,
          error: `the policy in force (version ${c.version}, epoch ${c.epoch}) was last confirmed current ${(c.lagMs / 1000).toFixed(1)} s ago, over fleet.max_policy_lag_ms (${c.boundMs} ms)`,
        },
    r.closing ? { name: 'accepting', ok: false, error: 'shutting down' } : { name: 'accepting', ok: true },
  ];
}

/**
 * The readiness of an instance (issue 21): for every configured database, its catalog has been
 * read (`catalog:<db>`) and the upstream answers on the catalog connection (`upstream:<db>`); the
 * policy is current (`policy`: the store, when there is one, is listening, so no change can be
 * missed; `policy-lag`: confirmed within the bound) and the instance is not shutting down
 * (`accepting`), see {@link instanceChecks}. `extra` checks are added. Never rejects.
 */
export async function readiness(
  proxy: ProxyServer,
  source: PolicySource | undefined,
  extra: readonly (() => ReadyCheck | Promise<ReadyCheck>)[] = [],
): Promise<{ ready: boolean; checks: ReadyCheck[] }> {
  const databases = Object.keys(proxy.config().config.databases);
  const probes = await Promise.all(databases.map((db) => proxy.probe(db, PROBE_TIMEOUT_MS)));
  const checks: ReadyCheck[] = [];
  databases.forEach((db, i) => {
    const p = probes[i] as Awaited<ReturnType<ProxyServer['probe']>>;
    checks.push(
      p.upstream
        ? { name: `upstream:${db}`, ok: true }
        : { name: `upstream:${db}`, ok: false, error: p.error ?? 'unreachable' },
      p.catalog
        ? { name: `catalog:${db}`, ok: true }
        : { name: `catalog:${db}`, ok: false, error: `the catalog of database "${db}" has not been read` },
    );
  });
  const store = source?.status();
  checks.push(
    store === undefined || store.state === 'listening'
      ? { name: 'policy', ok: true }
      : {
          name: 'policy',
          ok: false,
          error: `the policy store is ${store.state}: serving epoch ${proxy.epoch()}`,
        },
  );
  checks.push(...instanceChecks(proxy));
  for (const check of extra) checks.push(await check());
  return { ready: checks.every((c) => c.ok), checks };
}

/**
 * Registers `/healthz`, `/readyz` and `/metrics` (served without a caller, as a load balancer and a
 * Prometheus scraper call them). `/healthz` answers 200 while the process serves (liveness), with the
 * epoch and the store's state; `/readyz` 200 or 503 with each check; `/metrics` the Prometheus text
 * of `exposition` (default: this process's registry).
 */
export function opsRoutes(
  app: FastifyInstance,
  proxy: ProxyServer,
  source: PolicySource | undefined,
  opts: {
    exposition?: MetricsExposition;
    readyChecks?: readonly (() => ReadyCheck | Promise<ReadyCheck>)[];
  } = {},
): void {
  app.get(
    '/healthz',
    { schema: { tags: ['health'], summary: 'alive: the epoch in force and the state of the policy store' } },
    async () => {
      const store = source?.status();
      const stale = store !== undefined && store.state !== 'listening';
      return {
        status: stale ? 'stale' : 'ok',
        epoch: proxy.epoch(),
        sessions: proxy.sessionCount(),
        store: store ?? null,
      };
    },
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['health'],
        summary: 'ready: catalogs read, upstreams reachable, policy current (503 otherwise)',
      },
    },
    async (_req, reply) => {
      const r = await readiness(proxy, source, opts.readyChecks);
      reply.code(r.ready ? 200 : 503);
      return {
        status: r.ready ? 'ready' : 'not ready',
        epoch: proxy.epoch(),
        // What fails, in words: `<check>: <why>`.
        reasons: r.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.error ?? 'failed'}`),
        checks: r.checks,
      };
    },
  );
  app.get(
    '/metrics',
    { schema: { tags: ['health'], summary: 'Prometheus metrics (text exposition format)' } },
    async (_req, reply) => {
      const m = await (opts.exposition ?? processMetrics)();
      reply.type(m.contentType);
      return m.body;
    },
  );
}

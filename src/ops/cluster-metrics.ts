// One /metrics view over the workers of `serve --workers N`: prom-client's AggregatorRegistry in the primary, each worker's registry offered to it.
import type { AggregatorRegistry, PrometheusContentType } from 'prom-client';
import { metricsRegistry } from './metrics.js';

/**
 * In a worker of `serve --workers N`: loads this process's registry (ops/metrics.ts) and offers it
 * to the primary's `AggregatorRegistry`, whose requests prom-client answers over the cluster IPC
 * channel (`prom-client:getMetricsReq`). Call once, at the worker's start, so that a scrape never
 * waits on a worker that has not loaded prom-client. Resolves when the worker answers requests.
 */
export async function offerWorkerMetrics(): Promise<void> {
  const [{ AggregatorRegistry }, registry] = await Promise.all([import('prom-client'), metricsRegistry()]);
  // The constructor adds the worker's listener for the primary's requests.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
}

let aggregator: Promise<AggregatorRegistry<PrometheusContentType>> | undefined;

/**
 * In the primary of `serve --workers N`: every connected worker's metrics merged as each family
 * says (`sum`, `max` for the epoch gauge; prom-client's own rules for its process metrics), as
 * Prometheus text. Rejects (prom-client's "Operation timed out.") when a worker does not answer
 * within 5 s; resolves with an empty body when no worker is connected.
 */
export async function clusterExposition(): Promise<{ contentType: string; body: string }> {
  aggregator ??= import('prom-client').then(({ AggregatorRegistry }) => new AggregatorRegistry());
  const a = await aggregator;
  return { contentType: a.contentType, body: await a.clusterMetrics() };
}

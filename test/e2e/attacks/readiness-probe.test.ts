// /readyz is served without a caller: a flood of it must not queue a query per request on the catalog connection every session's analysis waits on.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await startTestProxy();
  // The catalog is read, the catalog connection open.
  expect(await proxy.server.probe('demo', 2000)).toEqual({ catalog: true, upstream: true });
}, 60_000);
afterAll(async () => {
  await proxy?.close();
});

describe('readiness probes at once', () => {
  test('1000 concurrent probes of one database share one SELECT 1 upstream', async () => {
    const query = vi.spyOn(pg.Client.prototype, 'query');
    try {
      const results = await Promise.all(Array.from({ length: 1000 }, () => proxy.server.probe('demo', 2000)));
      expect(results.every((r) => r.upstream && r.catalog)).toBe(true);
      const probes = query.mock.calls.filter((c) => c[0] === 'SELECT 1').length;
      // Unshared, each probe queued its own query on the shared catalog connection (catalog reads
      // behind them, and /readyz timing out for the load balancer: the instance out of rotation).
      expect(probes).toBeLessThanOrEqual(2);
    } finally {
      query.mockRestore();
    }
  });

  test('a probe after the shared one ended asks the upstream again', async () => {
    const query = vi.spyOn(pg.Client.prototype, 'query');
    try {
      await proxy.server.probe('demo', 2000);
      await new Promise((r) => setTimeout(r, 1100));
      await proxy.server.probe('demo', 2000);
      expect(query.mock.calls.filter((c) => c[0] === 'SELECT 1').length).toBe(2);
    } finally {
      query.mockRestore();
    }
  });
});

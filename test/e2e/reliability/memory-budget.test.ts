// Issue 16 item 2: large messages are held within one memory budget; one that cannot fit is refused (53200), rows over 16 MiB pass.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { burst, hugeStatement, rssOf, sampleRss } from '../../helpers/memory-burst.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { type Served, serveProcess } from '../../helpers/serve-process.js';

const MiB = 2 ** 20;

function withLimits(extra: Record<string, unknown>): Record<string, unknown> {
  const cfg = demoConfigObject();
  cfg.limits = { ...(cfg.limits as Record<string, unknown>), ...extra };
  return cfg;
}

describe('a message larger than the whole budget', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy(withLimits({ memory_budget_bytes: 16 * MiB }));
  });
  afterAll(() => proxy.close());

  it('is refused with ERROR 53200, that statement only: the session goes on', async () => {
    const c = await proxy.client('alice');
    try {
      const err = await c.query(hugeStatement(6 * MiB)).catch((e: { code?: string; message?: string }) => e);
      expect((err as { code?: string }).code).toBe('53200');
      expect((err as { message?: string }).message).toMatch(
        /^out of memory: a message of 629\d{4} bytes does not fit in pgwarden's memory budget of 16777216 bytes \(limits.memory_budget_bytes\)$/,
      );
      // A Bind too large for the budget (a 6 MiB parameter): refused at that message, skipped to Sync.
      const bind = await c
        .query('SELECT length($1::text) AS n', ['x'.repeat(6 * MiB)])
        .catch((e: { code?: string }) => e);
      expect((bind as { code?: string }).code).toBe('53200');
      const r = await c.query<{ one: number }>('SELECT 1 AS one');
      expect(r.rows).toEqual([{ one: 1 }]);
      // A statement within the budget passes.
      const ok = await c.query<{ same: boolean }>(hugeStatement(2 * MiB));
      expect(ok.rows).toEqual([{ same: false }]);
    } finally {
      await c.end();
    }
  });
});

describe('rows larger than 16 MiB from the upstream', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy(withLimits({ memory_budget_bytes: 256 * MiB }));
  });
  afterAll(() => proxy.close());

  it('a 40 MB text value read by a full-rights user arrives byte-identical', async () => {
    const c = await proxy.client('dba');
    try {
      const value = "SELECT string_agg(md5(i::text), '' ORDER BY i) FROM generate_series(1, 1250000) i";
      const r = await c.query<{ v: string; sum: string }>(`SELECT v, md5(v) AS sum FROM (${value}) AS s(v)`);
      const v = r.rows[0]?.v ?? '';
      expect(v.length).toBe(40_000_000);
      expect(crypto.createHash('md5').update(v).digest('hex')).toBe(r.rows[0]?.sum);
      // The connection is in sync afterwards.
      expect((await c.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    } finally {
      await c.end();
    }
  });
});

describe('a large statement masked at read (rewritten from its message bytes, sent around them)', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    // A session may keep a quarter of it in prepared statements: the 4 MB text and its rewrite.
    proxy = await startTestProxy(withLimits({ memory_budget_bytes: 128 * MiB }));
  });
  afterAll(() => proxy.close());

  it('answers masked through a Query and a named Parse, a hidden column as *****', async () => {
    const c = await proxy.client('alice');
    try {
      const big = 'a'.repeat(2 * MiB);
      const text = `SELECT email, '${big}' = 'x' AS same, 'b${big}' > 'b' AS more FROM users ORDER BY id LIMIT 1`;
      const want = [{ email: '*****', same: false, more: true }];
      expect((await c.query(text)).rows).toEqual(want);
      expect((await c.query({ name: 'huge_masked', text, values: [] })).rows).toEqual(want);
      expect((await c.query({ name: 'huge_masked', text, values: [] })).rows).toEqual(want);
      // The session is in sync afterwards.
      expect((await c.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    } finally {
      await c.end();
    }
  });
});

describe('a burst of large statements (small variant: 6 clients × 6 MB, budget 32 MiB)', () => {
  let served: Served | undefined;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-memory-'));
    served = await serveProcess(
      withLimits({ memory_budget_bytes: 32 * MiB }),
      path.join(dir, 'pgwarden.yaml'),
    );
  });
  afterAll(async () => {
    served?.child.kill('SIGTERM');
    await served?.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers every statement while the resident size stays under the budget plus a constant', async () => {
    const pid = served?.child.pid as number;
    const url = `postgres://alice:alice@127.0.0.1:${served?.port}/demo`;
    // Warm up (the catalog, the parser) so that the baseline holds what every session needs.
    await burst(url, 1, 'SELECT 1 = 2 AS same');
    const before = rssOf(pid);
    const sampler = sampleRss(pid);
    const out = await burst(url, 6, hugeStatement(6_000_000));
    const peak = sampler.stop();
    expect(out.map((o) => o.ok)).toEqual([true, true, true, true, true, true]);
    // The budget (32 MiB, each 6 MB message counted at four times its size: one held at a time)
    // plus a constant: the working copies V8 collects late and the heap's own growth. Without the
    // budget all six arrive and are held at once.
    expect(peak - before).toBeLessThan(32 * MiB + 144 * MiB);
  });
});

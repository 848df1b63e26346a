// Issue 16 item 2, heavy: 24 clients × 60 MB statements at once through `pgwarden serve`; its resident size stays under the budget plus a constant and comes back down.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { burst, hugeStatement, rssOf, sampleRss } from '../helpers/memory-burst.js';
import { demoConfigObject } from '../helpers/proxy.js';
import { type Served, serveProcess } from '../helpers/serve-process.js';

const MiB = 2 ** 20;
const BUDGET = 256 * MiB;

describe('24 clients × 60 MB statements, budget 256 MiB', () => {
  let served: Served;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-burst-'));
    const cfg = demoConfigObject();
    cfg.limits = { ...(cfg.limits as Record<string, unknown>), memory_budget_bytes: BUDGET };
    served = await serveProcess(cfg, path.join(dir, 'pgwarden.yaml'));
  });
  afterAll(async () => {
    served.child.kill('SIGTERM');
    await served.exited;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers all 24 from the least-privileged user, RSS under budget + constant, back down within a minute', async () => {
    const pid = served.child.pid as number;
    const url = `postgres://alice:alice@127.0.0.1:${served.port}/demo`;
    await burst(url, 1, 'SELECT 1 = 2 AS same');
    const before = rssOf(pid);
    const sampler = sampleRss(pid);
    const started = performance.now();
    const out = await burst(url, 24, hugeStatement(60_000_000));
    const elapsed = performance.now() - started;
    const peak = sampler.stop();
    console.log(
      `24 × 60 MB: ${Math.round(elapsed)} ms; RSS before ${Math.round(before / MiB)} MiB, peak ${Math.round(peak / MiB)} MiB`,
    );
    expect(out.filter((o) => o.ok)).toHaveLength(24);
    expect(peak - before).toBeLessThan(BUDGET + 512 * MiB);
    await new Promise((r) => setTimeout(r, 60_000));
    const after = rssOf(pid);
    console.log(`RSS a minute after: ${Math.round(after / MiB)} MiB`);
    expect(after - before).toBeLessThan(256 * MiB);
  }, 900_000);
});

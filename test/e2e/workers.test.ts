// `serve --workers 2`: two processes share the listening socket, each issuing keys with its worker index; a CancelRequest that reaches the other worker is handed over and cancels the statement.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { keyOwner } from '../../src/proxy/cancel-key.js';
import { cancelRequest } from '../../src/wire/frontend-encode.js';
import { demoConfigObject } from '../helpers/proxy.js';
import { type Served, serveProcess } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-workers-'));
let served: Served;

beforeAll(async () => {
  served = await serveProcess(demoConfigObject(), path.join(dir, 'workers.yaml'), ['--workers', '2']);
  // Both workers listen (the first one's line let serveProcess return).
  for (;;) {
    if (served.lines.filter((l) => l.event === 'listening').length >= 2) break;
    await new Promise((r) => setTimeout(r, 50));
  }
}, 120_000);
afterAll(async () => {
  served.child.kill('SIGTERM');
  await served.exited;
  fs.rmSync(dir, { recursive: true, force: true });
});

function sendCancel(port: number, processID: number, secretKey: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => s.write(cancelRequest(processID, secretKey)));
    s.on('error', reject);
    s.on('close', () => resolve());
    s.resume();
  });
}

describe('serve --workers 2', () => {
  test('sessions land on both workers; a cancel for either is served whichever worker gets it', async () => {
    const clients: pg.Client[] = [];
    try {
      const byWorker = new Map<number, pg.Client>();
      for (let i = 0; i < 12 && byWorker.size < 2; i++) {
        const c = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${served.port}/demo` });
        await c.connect();
        clients.push(c);
        const owner = keyOwner((c as unknown as { processID: number }).processID);
        expect(owner.slot).toBe(0);
        if (!byWorker.has(owner.worker)) byWorker.set(owner.worker, c);
      }
      expect([...byWorker.keys()].sort()).toEqual([0, 1]);
      for (const c of byWorker.values()) {
        const key = c as unknown as { processID: number; secretKey: number };
        const running = c.query('SELECT pg_sleep(30)').then(
          () => undefined,
          (e: { code?: string }) => e,
        );
        await new Promise((r) => setTimeout(r, 200));
        // Twice over fresh connections: the cluster deals connections round-robin, so one of the
        // two reaches the other worker (a second cancel of a canceled statement does nothing).
        const sent = performance.now();
        await sendCancel(served.port, key.processID, key.secretKey);
        await sendCancel(served.port, key.processID, key.secretKey);
        const err = await running;
        console.log(`cancel across workers: ${(performance.now() - sent).toFixed(1)} ms`);
        expect(err).toMatchObject({ code: '57014' });
      }
      const outcomes = served.lines.filter((l) => l.event === 'cancel-request').map((l) => l.outcome);
      expect(outcomes.every((o) => o === 'local' || o === 'worker')).toBe(true);
      expect(outcomes.filter((o) => o === 'worker').length).toBeGreaterThanOrEqual(1);
      expect(outcomes.filter((o) => o === 'local').length).toBeGreaterThanOrEqual(1);
    } finally {
      for (const c of clients) await c.end().catch(() => {});
    }
  }, 120_000);

  test('SIGHUP reaches every worker', async () => {
    served.child.kill('SIGHUP');
    for (;;) {
      if (served.lines.filter((l) => l.event === 'reload').length >= 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(new Set(served.lines.filter((l) => l.event === 'reload').map((l) => l.worker))).toEqual(
      new Set([0, 1]),
    );
  }, 60_000);
});

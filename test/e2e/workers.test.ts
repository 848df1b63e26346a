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
import { untilRunningUpstream } from '../helpers/upstream-activity.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-workers-'));
let served: Served;
let adminPort = 0;

/** The value of one sample of `/metrics` (0 when absent). */
async function sample(series: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
  expect(r.status).toBe(200);
  const line = (await r.text()).split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

beforeAll(async () => {
  served = await serveProcess(demoConfigObject(), path.join(dir, 'workers.yaml'), [
    '--workers',
    '2',
    '--admin',
    '127.0.0.1:0',
  ]);
  adminPort = (await served.waitFor((l) => l.event === 'admin-listening', 60_000)).port as number;
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
      for (const [worker, c] of byWorker) {
        const key = c as unknown as { processID: number; secretKey: number };
        const sleep = `pg_sleep(30.0${worker}13)`;
        const running = c.query(`SELECT ${sleep}`).then(
          () => undefined,
          (e: { code?: string }) => e,
        );
        // Cancel once the statement runs upstream (a cancel that arrives first cancels nothing).
        await untilRunningUpstream(sleep);
        // Twice over fresh connections: the cluster deals connections round-robin, so one of the
        // two reaches the other worker (a second cancel of a canceled statement does nothing).
        const sent = performance.now();
        await sendCancel(served.port, key.processID, key.secretKey);
        await sendCancel(served.port, key.processID, key.secretKey);
        const err = await running;
        console.log(`cancel across workers: ${(performance.now() - sent).toFixed(1)} ms`);
        expect(err).toMatchObject({ code: '57014' });
      }
      // One line per cancel request, logged in batches: wait for all four before reading them.
      const cancels = () => served.lines.filter((l) => l.event === 'cancel-request');
      const deadline = Date.now() + 20_000;
      while (cancels().length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const outcomes = cancels().map((l) => l.outcome);
      expect(outcomes).toHaveLength(4);
      expect(outcomes.every((o) => o === 'local' || o === 'worker')).toBe(true);
      expect(outcomes.filter((o) => o === 'worker').length).toBeGreaterThanOrEqual(1);
      expect(outcomes.filter((o) => o === 'local').length).toBeGreaterThanOrEqual(1);
    } finally {
      for (const c of clients) await c.end().catch(() => {});
    }
  }, 120_000);

  test('/metrics of the admin API (served by worker 0) counts the sessions and statements of both workers', async () => {
    const connections = 'pgwarden_client_connections_total';
    const active = 'pgwarden_client_connections{state="active"}';
    const selects = 'pgwarden_statements_total{kind="SELECT",verdict="allowed"}';
    const before = { connections: await sample(connections), selects: await sample(selects) };
    const clients: pg.Client[] = [];
    const perWorker = [0, 0];
    try {
      // Connections are dealt round-robin: eight land on both workers.
      for (let i = 0; i < 8; i++) {
        const c = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${served.port}/demo` });
        await c.connect();
        clients.push(c);
        const worker = keyOwner((c as unknown as { processID: number }).processID).worker;
        perWorker[worker] = (perWorker[worker] ?? 0) + 1;
        await c.query('SELECT 1 AS one');
      }
      expect(perWorker[0]).toBeGreaterThan(0);
      expect(perWorker[1]).toBeGreaterThan(0);
      expect(await sample(active)).toBe(8);
      expect((await sample(connections)) - before.connections).toBe(8);
      expect((await sample(selects)) - before.selects).toBe(8);
      console.log(`sessions per worker: ${perWorker.join(' + ')} = ${await sample(active)} in /metrics`);
    } finally {
      for (const c of clients) await c.end().catch(() => {});
    }
  }, 120_000);

  test("the wire console's RELOAD in one worker reloads both", async () => {
    const before = served.lines.filter((l) => l.event === 'reload').length;
    const c = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${served.port}/pgwarden` });
    await c.connect();
    try {
      await c.query('RELOAD');
    } finally {
      await c.end();
    }
    for (;;) {
      const reloads = served.lines.filter((l) => l.event === 'reload').slice(before);
      if (new Set(reloads.map((l) => l.worker)).size === 2) {
        expect(reloads).toHaveLength(2);
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);

  test('SIGHUP reaches every worker', async () => {
    // Only the reloads after this SIGHUP count (the RELOAD test before logged two already).
    const before = served.lines.filter((l) => l.event === 'reload').length;
    served.child.kill('SIGHUP');
    const reloads = () => served.lines.filter((l) => l.event === 'reload').slice(before);
    for (;;) {
      if (reloads().length >= 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(new Set(reloads().map((l) => l.worker))).toEqual(new Set([0, 1]));
  }, 60_000);
});

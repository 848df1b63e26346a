// /readyz of `pgwarden serve --admin` (issue 21): 200 when ready; 503 naming the reason when a catalog is not read, an upstream is unreachable, the policy lags the store past fleet.max_policy_lag_ms, or the instance is shutting down.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD } from '../../src/embedded/demo.js';
import { type PausableRelay, pausableRelay } from '../helpers/pausable-relay.js';
import {
  createAppDatabase,
  createDemoStore,
  type StoreDatabase,
  storeInstanceConfig,
  superuserUrl,
} from '../helpers/policy-store-db.js';
import { demoConfigObject } from '../helpers/proxy.js';
import { type Served, serveProcess, stopChild } from '../helpers/serve-process.js';
import { untilRunningUpstream } from '../helpers/upstream-activity.js';

interface Ready {
  status: string;
  reasons: string[];
  checks: { name: string; ok: boolean; error?: string }[];
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-readyz-'));
/** A database whose catalog pgwarden_app may not read (SELECT on pg_class revoked from PUBLIC). */
const restricted = `pgwarden_nocatalog_${crypto.randomBytes(3).toString('hex')}`;
let store: StoreDatabase;
let restrictedDb: { drop(): Promise<void> } | undefined;
const served: Served[] = [];

async function readyz(adminPort: number): Promise<{ code: number; body: Ready }> {
  const r = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
  return { code: r.status, body: (await r.json()) as Ready };
}

/** Starts `pgwarden serve --admin` with `cfg`; resolves with it and its admin port once the admin listens. */
async function serveWithAdmin(cfg: Record<string, unknown>, name: string) {
  // Port 0: the kernel picks it as the admin API binds (a port chosen beforehand could be taken meanwhile).
  const s = await serveProcess(cfg, path.join(dir, name), ['--admin', '127.0.0.1:0']);
  served.push(s);
  const line = await s.waitFor((l) => l.event === 'admin-listening', 30_000);
  return { served: s, adminPort: line.port as number };
}

beforeAll(async () => {
  store = (await createDemoStore(dir)).store;
  restrictedDb = await createAppDatabase(restricted);
  const inDb = new pg.Client({ connectionString: superuserUrl(restricted) });
  await inDb.connect();
  await inDb.query('REVOKE SELECT ON pg_catalog.pg_class FROM PUBLIC');
  await inDb.end();
}, 120_000);

afterAll(async () => {
  await Promise.all(served.map((s) => stopChild(s.child, s.exited)));
  await store?.drop();
  await restrictedDb?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('/readyz of pgwarden serve', () => {
  test('ready with the store current; 503 (policy-lag) once the store goes silent past max_policy_lag_ms; ready again once it answers', async () => {
    const { host, port } = inject('pg');
    const relay: PausableRelay = await pausableRelay(host, port);
    try {
      const viaRelay = store.url.replace(`@${host}:${port}/`, `@127.0.0.1:${relay.port}/`);
      const { served: s, adminPort } = await serveWithAdmin(
        storeInstanceConfig(viaRelay, {
          fleet: { heartbeat_ms: 300, instance_ttl_ms: 2000, max_policy_lag_ms: 1500 },
        }),
        'lag.yaml',
      );
      const ok = await readyz(adminPort);
      expect(ok.code).toBe(200);
      expect(ok.body.status).toBe('ready');
      expect(ok.body.reasons).toEqual([]);
      expect(ok.body.checks.map((c) => [c.name, c.ok])).toEqual([
        ['upstream:demo', true],
        ['catalog:demo', true],
        ['policy', true],
        ['policy-lag', true],
        ['accepting', true],
      ]);

      // Lines logged from here on only (a loaded machine may have gone stale once while starting).
      const since = (from: number, event: string) => (l: Record<string, unknown>) =>
        l.event === event && s.lines.indexOf(l) >= from;
      let from = s.lines.length;
      relay.pause();
      await s.waitFor(since(from, 'policy-stale'), 60_000);
      const stale = await readyz(adminPort);
      expect(stale.code).toBe(503);
      expect(stale.body.status).toBe('not ready');
      const lag = stale.body.checks.find((c) => c.name === 'policy-lag');
      expect(lag?.ok).toBe(false);
      expect(lag?.error).toMatch(
        /^the policy in force \(version 1, epoch [0-9a-f]{16}\) was last confirmed current \d+\.\d s ago, over fleet\.max_policy_lag_ms \(1500 ms\)$/,
      );
      expect(stale.body.reasons).toEqual([`policy-lag: ${lag?.error}`]);
      // The store's address is not in an answer served without a caller.
      expect(JSON.stringify(stale.body)).not.toContain(String(relay.port));

      from = s.lines.length;
      relay.resume();
      await s.waitFor(since(from, 'policy-current'), 60_000);
      expect((await readyz(adminPort)).code).toBe(200);
    } finally {
      relay.resume();
      await relay.close();
    }
  }, 120_000);

  test('503 naming the database whose upstream is unreachable and the one whose catalog cannot be read; 503 (accepting) while shutting down', async () => {
    // A port nothing listens on: bound, then closed.
    const dead = net.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', () => r()));
    const deadPort = (dead.address() as net.AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const { port } = inject('pg');
    const cfg = demoConfigObject();
    cfg.databases = {
      ...(cfg.databases as object),
      gone: { url: `postgres://pgwarden_app:x@127.0.0.1:${deadPort}/gone` },
      nocatalog: {
        url: `postgres://pgwarden_app:${DEMO_APP_PASSWORD}@127.0.0.1:${port}/${restricted}`,
      },
    };
    cfg.limits = { ...(cfg.limits as object), shutdown_grace_ms: 5000 };
    const { served: s, adminPort } = await serveWithAdmin(cfg, 'down.yaml');
    const down = await readyz(adminPort);
    expect(down.code).toBe(503);
    const byName = new Map(down.body.checks.map((c) => [c.name, c]));
    expect(byName.get('upstream:demo')?.ok).toBe(true);
    expect(byName.get('catalog:demo')?.ok).toBe(true);
    expect(byName.get('upstream:gone')).toEqual({
      name: 'upstream:gone',
      ok: false,
      error: 'the upstream does not answer on the catalog connection',
    });
    expect(byName.get('catalog:gone')?.ok).toBe(false);
    // Reachable, but its catalog cannot be read.
    expect(byName.get('upstream:nocatalog')?.ok).toBe(true);
    expect(byName.get('catalog:nocatalog')).toMatchObject({ ok: false });
    expect(down.body.reasons).toContain(
      'upstream:gone: the upstream does not answer on the catalog connection',
    );
    expect(down.body.reasons.some((r) => r.startsWith('catalog:nocatalog: '))).toBe(true);
    expect(byName.get('accepting')?.ok).toBe(true);
    expect(JSON.stringify(down.body)).not.toContain(String(deadPort));
    expect(JSON.stringify(down.body)).not.toContain(String(port));

    // A statement running at SIGTERM keeps the instance in its grace period: /readyz says so.
    const client = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${s.port}/demo` });
    client.on('error', () => {});
    await client.connect();
    const running = client.query('SELECT pg_sleep(3.0303)').catch((e: unknown) => e);
    // SIGTERM once the statement runs upstream: one still on its way leaves the session idle.
    await untilRunningUpstream('pg_sleep(3.0303)');
    s.child.kill('SIGTERM');
    await s.waitFor((l) => l.event === 'shutdown');
    const closing = await readyz(adminPort);
    expect(closing.code).toBe(503);
    expect(closing.body.checks.find((c) => c.name === 'accepting')).toEqual({
      name: 'accepting',
      ok: false,
      error: 'shutting down',
    });
    await running;
    await client.end().catch(() => {});
    await s.exited;
  }, 120_000);
});

// /metrics, /healthz and /readyz on the admin listener: counters move for the refusing rule and column; /readyz fails with the upstream down.
import net from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AdminServer, startAdmin } from '../../src/admin/admin-server.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

const silent = pino({ level: 'silent' });
let proxy: TestProxy;
let admin: AdminServer;
let base = '';

/** The value of one sample of the exposition (0 when absent), e.g. `pgwarden_statements_total{kind="SELECT",verdict="refused"}`. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function scrape(url = base): Promise<string> {
  const r = await fetch(`${url}/metrics`);
  expect(r.status).toBe(200);
  expect(r.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return r.text();
}

beforeAll(async () => {
  proxy = await startTestProxy();
  admin = await startAdmin({
    listen: '127.0.0.1:0',
    proxy: proxy.server,
    source: undefined,
    logger: silent,
    auditLogger: silent,
  });
  base = `http://127.0.0.1:${admin.address.port}`;
}, 60_000);

afterAll(async () => {
  await admin?.close();
  await proxy?.close();
});

describe('/metrics', () => {
  test('a refusal moves the counters of its rule and its column; masks count per role', async () => {
    const alice = await proxy.client('alice');
    try {
      const before = await scrape();
      const rule = 'pgwarden_refusals_total{rule="roles.analyst.permissions[1]",sqlstate="42501"}';
      const column = 'pgwarden_column_refusals_total{database="demo",column="public.users.email"}';
      const refused = 'pgwarden_statements_total{kind="SELECT",verdict="refused"}';
      const masked = 'pgwarden_masked_columns_total{role="analyst"}';
      await expect(alice.query("select id from users where email like 'a%'")).rejects.toMatchObject({
        code: '42501',
      });
      await alice.query('select * from users');
      const after = await scrape();
      expect(sample(after, rule) - sample(before, rule)).toBe(1);
      expect(sample(after, column) - sample(before, column)).toBe(1);
      expect(sample(after, refused) - sample(before, refused)).toBe(1);
      // users.email and users.ssn come back masked.
      expect(sample(after, masked) - sample(before, masked)).toBe(2);
      expect(
        sample(after, 'pgwarden_statements_total{kind="SELECT",verdict="masked"}'),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await alice.end();
    }
  });

  test('an unknown column is refused without a column label; connections, caches, epoch, histograms, memory', async () => {
    const alice = await proxy.client('alice');
    try {
      await expect(alice.query('select no_such_column_x from users')).rejects.toMatchObject({
        code: '42703',
      });
      // One message in 16 is timed: 40 Query messages time at least two.
      for (let i = 0; i < 40; i++) await alice.query(`select id from users where id = ${i}`);
      const text = await scrape();
      expect(text).not.toContain('no_such_column_x');
      expect(sample(text, 'pgwarden_refusals_total{rule="-",sqlstate="42703"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'pgwarden_client_connections{state="active"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'pgwarden_client_connections_total')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'pgwarden_upstream_sessions')).toBeGreaterThanOrEqual(1);
      // A session memoizes gate results by lexical key (gate-memo.ts): the caches see the first text.
      expect(sample(text, 'pgwarden_analysis_cache_total{result="miss"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'pgwarden_decision_cache_total{result="miss"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, `pgwarden_policy_epoch{epoch="${proxy.server.epoch()}"}`)).toBe(1);
      expect(
        sample(text, 'pgwarden_catalog_reads_total{database="demo",kind="full",result="ok"}'),
      ).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'pgwarden_statement_proxy_duration_seconds_count')).toBeGreaterThanOrEqual(2);
      expect(sample(text, 'pgwarden_statement_upstream_duration_seconds_count')).toBeGreaterThanOrEqual(2);
      expect(sample(text, 'pgwarden_statement_upstream_duration_seconds_bucket{le="+Inf"}')).toBe(
        sample(text, 'pgwarden_statement_upstream_duration_seconds_count'),
      );
      expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(1e6);
    } finally {
      await alice.end();
    }
  });

  test('a refused login is counted by its condition name', async () => {
    const before = sample(
      await scrape(),
      'pgwarden_client_connections_refused_total{reason="invalid_password"}',
    );
    await expect(proxy.client('alice', 'wrong')).rejects.toMatchObject({ code: '28P01' });
    const after = sample(
      await scrape(),
      'pgwarden_client_connections_refused_total{reason="invalid_password"}',
    );
    expect(after - before).toBe(1);
  });
});

describe('/healthz and /readyz', () => {
  test('ready with the upstream up', async () => {
    const h = await fetch(`${base}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json()).toMatchObject({ status: 'ok', epoch: proxy.server.epoch() });
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toMatchObject({
      status: 'ready',
      checks: [
        { name: 'upstream:demo', ok: true },
        { name: 'catalog:demo', ok: true },
        { name: 'policy', ok: true },
        { name: 'policy-lag', ok: true },
        { name: 'accepting', ok: true },
      ],
    });
  });

  test('not ready (503) with the upstream down; alive all the same', async () => {
    // A port nothing listens on: bound, then closed.
    const dead = net.createServer();
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', () => r()));
    const port = (dead.address() as net.AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const config = demoConfigObject();
    const dbs = config.databases as Record<string, { url: string; roles?: string }>;
    // roles: single: managed roles would need the upstream to start at all.
    dbs.demo = { url: `postgres://pgwarden_app:x@127.0.0.1:${port}/demo`, roles: 'single' };
    const down = await startTestProxy(config);
    const downAdmin = await startAdmin({
      listen: '127.0.0.1:0',
      proxy: down.server,
      source: undefined,
      logger: silent,
      auditLogger: silent,
    });
    try {
      const url = `http://127.0.0.1:${downAdmin.address.port}`;
      const r = await fetch(`${url}/readyz`);
      expect(r.status).toBe(503);
      const body = (await r.json()) as {
        status: string;
        checks: { name: string; ok: boolean; error?: string }[];
      };
      expect(body.status).toBe('not ready');
      expect(body.checks.find((c) => c.name === 'upstream:demo')).toMatchObject({ ok: false });
      expect(body.checks.find((c) => c.name === 'catalog:demo')).toMatchObject({ ok: false });
      // Neither the upstream's address nor its port is in the answer.
      expect(JSON.stringify(body)).not.toContain(String(port));
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
    } finally {
      await downAdmin.close();
      await down.close();
    }
  });
});

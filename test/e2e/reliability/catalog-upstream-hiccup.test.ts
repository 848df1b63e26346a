// Issue 16 item 3: a catalog refresh while the upstream accepts no new connection (a frozen postmaster) does not stall sessions whose own connections are healthy.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';

const server = inject('pg');
const DB = 'catalog_hiccup';
const APP = { user: 'pgwarden_app', password: 'pgwarden-app-demo' };

/**
 * A relay to the test PostgreSQL whose connections made while `freeze` holds are accepted but not
 * passed on until `thaw`, as a postmaster stopped with SIGSTOP does (the kernel accepts, nothing
 * answers); connections made before go on.
 */
async function postmasterRelay(): Promise<{
  port: number;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}> {
  let frozen = false;
  let held: (() => void)[] = [];
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((inbound) => {
    sockets.add(inbound);
    const relay = () => {
      const outbound = net.connect({ host: server.host, port: server.port });
      sockets.add(outbound);
      inbound.pipe(outbound);
      outbound.pipe(inbound);
      const end = () => {
        inbound.destroy();
        outbound.destroy();
      };
      for (const s of [inbound, outbound]) s.on('error', end).on('close', end);
    };
    inbound.on('error', () => inbound.destroy());
    if (frozen) held.push(relay);
    else relay();
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return {
    port: (srv.address() as net.AddressInfo).port,
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      for (const h of held) h();
      held = [];
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => srv.close(() => r()));
    },
  };
}

function direct(database: string, who: { user: string; password: string }): Promise<pg.Client> {
  const c = new pg.Client({ host: server.host, port: server.port, database, ...who });
  return c.connect().then(() => c);
}

let proxy: TestProxy;
let relay: Awaited<ReturnType<typeof postmasterRelay>>;

beforeAll(async () => {
  const admin = await direct('postgres', { user: server.superuser, password: server.superuserPassword });
  await admin.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${DB} OWNER pgwarden_app`);
  await admin.end();
  const app = await direct(DB, APP);
  await app.query(
    `CREATE TABLE orgs (id int PRIMARY KEY, name text NOT NULL); INSERT INTO orgs VALUES (1, 'Acme');`,
  );
  await app.end();
  relay = await postmasterRelay();
  const cfg = demoConfigObject();
  cfg.databases = {
    [DB]: { url: `postgres://${APP.user}:${APP.password}@127.0.0.1:${relay.port}/${DB}` },
  };
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles.analyst = {
    ...roles.analyst,
    permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: DB }],
  };
  delete (cfg as { keys_file?: string }).keys_file;
  proxy = await startTestProxy(cfg);
});
afterAll(async () => {
  relay?.thaw();
  await proxy?.close();
  await relay?.close();
});

describe('catalog refresh during an upstream hiccup (issue 16)', () => {
  it('after DDL while no new upstream connection is answered, another session is not held for the catalog connection', async () => {
    const dba = await proxy.client('dba', 'dba', DB);
    const alice = await proxy.client('alice', 'alice', DB);
    try {
      expect((await alice.query('SELECT name FROM orgs')).rows).toEqual([{ name: 'Acme' }]);
      // The catalog connection is gone (an idle timeout, a restart of a pooler): a refresh must open one.
      const su = await direct(DB, { user: server.superuser, password: server.superuserPassword });
      await su.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${DB}' AND application_name = 'pgwarden catalog'`,
      );
      await su.end();
      await new Promise((r) => setTimeout(r, 200));
      relay.freeze();
      await dba.query('CREATE TABLE made_in_hiccup (k int)');
      // Postgres answers at once: the session's own connection is healthy.
      const t0 = performance.now();
      expect((await alice.query('SELECT name FROM orgs')).rows).toEqual([{ name: 'Acme' }]);
      const ms = performance.now() - t0;
      console.log(`statement during the hiccup after DDL: ${ms.toFixed(0)} ms`);
      // Held for the catalog connection, it would wait out connect_timeout_ms (10 s): a bound well
      // under that, with slack for a loaded machine.
      expect(ms).toBeLessThan(6000);
      expect((await alice.query('SELECT k FROM made_in_hiccup')).rows).toEqual([]);
    } finally {
      relay.thaw();
      await dba.end();
      await alice.end();
    }
  });
});

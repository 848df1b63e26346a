// Connecting is refused where the caller's roles grant nothing, and clients never learn the upstream's address (issue 16 items 7, 8).
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let proxy: TestProxy;
let deadPort = 0;
const logLines: Record<string, unknown>[] = [];

/** A port nothing listens on: bound once by the kernel, then released. */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  deadPort = await freePort();
  const cfg = demoConfigObject();
  const databases = cfg.databases as Record<string, { url: string }>;
  // `reports` is the demo database under another name, mentioned by a role alice does not hold.
  databases.reports = { url: databases.demo?.url as string };
  databases.down = { url: `postgres://pgwarden_app:x@127.0.0.1:${deadPort}/demo` };
  const roles = cfg.roles as Record<string, { tenants?: string[]; permissions: unknown[] }>;
  roles.reporter = {
    tenants: [],
    permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'reports' }],
  };
  proxy = await startTestProxy(cfg, { logLines });
});
afterAll(async () => {
  await proxy.close();
});

async function connectError(user: string, database: string): Promise<pg.DatabaseError> {
  const c = new pg.Client({ connectionString: proxy.url(user, user, database) });
  c.on('error', () => {});
  const e = await c.connect().then(
    () => null,
    (err: unknown) => err,
  );
  await c.end().catch(() => {});
  if (!(e instanceof Error)) throw new Error(`connected to ${database} as ${user}`);
  return e as pg.DatabaseError;
}

describe('a database where none of the caller’s roles grants anything (item 7)', () => {
  test('is refused at connect with 28000 naming the database, before any table can be listed', async () => {
    const e = await connectError('alice', 'reports');
    expect(e.code).toBe('28000');
    expect(e.severity).toBe('FATAL');
    expect(e.message).toBe('permission denied for database "reports"');
  });

  test('a role that grants on it still connects and reads', async () => {
    const c = await proxy.client('dba', 'dba', 'reports');
    const r = await c.query("select count(*)::int as n from pg_tables where schemaname = 'public'");
    expect(r.rows[0].n).toBeGreaterThan(0);
    await c.end();
  });
});

describe('upstream addresses never reach clients (item 8)', () => {
  test('a refused upstream connection is FATAL 08006 without host or port; the log has both', async () => {
    const e = await connectError('dba', 'down');
    expect(e.code).toBe('08006');
    expect(e.message).toBe('could not connect to the upstream server');
    expect(e.message).not.toContain(String(deadPort));
    expect(e.message).not.toContain('127.0.0.1');
    const line = logLines.find((l) => l.event === 'upstream-login-failed');
    expect(line?.upstream).toBe(`127.0.0.1:${deadPort}`);
    expect(String(line?.err)).toContain('ECONNREFUSED');
  });
});

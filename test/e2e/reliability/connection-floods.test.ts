// Idle and flooding connections: handshakes have their own limits and timeout, and every refused client gets 53300 (issue 16 item 5).
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { BackendCode } from '../../../src/wire/codes.js';
import { decodeErrorResponse } from '../../../src/wire/error-fields.js';
import { MessageFramer } from '../../../src/wire/framer.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let proxy: TestProxy;
let floodProxy: TestProxy;
const LIMITS = {
  auth_failure_delay_ms: 10,
  shutdown_grace_ms: 500,
  max_client_connections: 20,
  max_pending_connections: 40,
  max_pending_per_address: 30,
};
beforeAll(async () => {
  const cfg = demoConfigObject();
  cfg.limits = { ...LIMITS, authentication_timeout_ms: 1500 };
  proxy = await startTestProxy(cfg);
  // The flood runs with the default 10 s authentication timeout: on a loaded machine 150 SCRAM
  // logins at once may take longer than 1.5 s, and that is not what this test is about.
  const flood = demoConfigObject();
  flood.limits = LIMITS;
  floodProxy = await startTestProxy(flood);
});
afterAll(async () => {
  await proxy.close();
  await floodProxy.close();
});

/** A socket that connects from `localAddress` and sends nothing; resolves once connected. */
function idleSocket(localAddress = '127.0.0.1'): Promise<{ socket: net.Socket; closed: Promise<Buffer> }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: proxy.port, host: '127.0.0.1', localAddress });
    const chunks: Buffer[] = [];
    const closed = new Promise<Buffer>((r) => socket.on('close', () => r(Buffer.concat(chunks))));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

function firstError(bytes: Buffer): { code: string; message: string } | undefined {
  const frames = new MessageFramer({ maxMessageBytes: 1 << 20, startup: false }).push(bytes);
  const f = frames.find((x) => x.code === BackendCode.ErrorResponse);
  return f ? decodeErrorResponse(f.payload) : undefined;
}

async function login(localAddress?: string): Promise<pg.Client> {
  // pg connects its stream with (port, host): bind the local address on the way.
  const stream = () => {
    const s = new net.Socket();
    const connect = s.connect.bind(s);
    s.connect = ((port: number, host: string) => connect({ port, host, localAddress })) as typeof s.connect;
    return s;
  };
  const c = new pg.Client({
    connectionString: proxy.url('alice'),
    ...(localAddress ? { stream } : {}),
  });
  await c.connect();
  return c;
}

async function waitFor(pred: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('connections that never log in', () => {
  test('do not count as sessions, are capped per address with 53300, and time out', async () => {
    const idle = await Promise.all(Array.from({ length: 30 }, () => idleSocket()));
    await waitFor(() => proxy.server.pendingCount() === 30, 5000);
    expect(proxy.server.sessionCount()).toBe(0);
    // The 31st from the same address is refused at once, with a message.
    const over = await idleSocket();
    const overBytes = await over.closed;
    expect(firstError(overBytes)).toEqual(
      expect.objectContaining({
        code: '53300',
        message: 'sorry, too many connections from this address are logging in at once',
      }),
    );
    // Another address logs in meanwhile: the idle handshakes lock nobody else out.
    const other = await login('127.0.0.2');
    expect((await other.query('select 1 as one')).rows[0].one).toBe(1);
    await other.end();
    // authentication_timeout: the idle ones are closed after 1.5 s, with a FATAL.
    const started = Date.now();
    const bytes = await Promise.all(idle.map((i) => i.closed));
    // Without the timeout they would stay open for good; seconds of slack for a loaded machine.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(firstError(bytes[0] as Buffer)).toEqual(
      expect.objectContaining({ code: '57014', message: 'canceling authentication due to timeout' }),
    );
    const again = await login();
    await again.end();
  });
});

describe('a login flood', () => {
  test('every client over the limits gets FATAL 53300, none a bare disconnect', async () => {
    const results = await Promise.all(
      Array.from({ length: 150 }, async () => {
        const c = new pg.Client({ connectionString: floodProxy.url('alice') });
        c.on('error', () => {});
        try {
          await c.connect();
          await c.query('select 1');
          await new Promise((r) => setTimeout(r, 500));
          await c.end();
          return 'ok';
        } catch (e) {
          await c.end().catch(() => {});
          return (e as pg.DatabaseError).code ?? (e as Error).message;
        }
      }),
    );
    const counts: Record<string, number> = {};
    for (const r of results) counts[r] = (counts[r] ?? 0) + 1;
    expect(Object.keys(counts).sort()).toEqual(['53300', 'ok']);
    expect(counts.ok).toBeGreaterThanOrEqual(20);
    expect(floodProxy.server.sessionCount()).toBeLessThanOrEqual(20);
  });
});

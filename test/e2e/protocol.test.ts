// The start-up phase and the proxy's own protocol answers, with bytes sent by hand.
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { BackendCode } from '../../src/wire/codes.js';
import { gssencRequest, query, sslRequest, startupMessage } from '../../src/wire/frontend-encode.js';
import { demoConfigObject, startTestProxy } from '../helpers/proxy.js';
import { useProxyFixture } from '../helpers/proxy-fixture.js';
import { errorOf, RawClient, statusOf } from '../helpers/raw-client.js';
import { untilRunningUpstream } from '../helpers/upstream-activity.js';

const fx = useProxyFixture();

const alice = { user: 'alice', database: 'demo' };

/** Asserts the proxy still serves a normal client. */
async function stillServes(): Promise<void> {
  const c = await fx.proxy.client('alice');
  expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
  await c.end();
}

describe('start-up', () => {
  test('SSLRequest without TLS configured is answered N, then the StartupMessage works', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    c.negotiate(sslRequest());
    await c.until(() => c.received().length >= 1);
    expect(c.received().subarray(0, 1).toString()).toBe('N');
    const frames = await c.login(alice, 'alice');
    expect(statusOf(frames[frames.length - 1]!)).toBe('I');
    c.end();
  });

  test('GSSENCRequest is answered N and a StartupMessage follows on the same connection', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    c.negotiate(gssencRequest());
    await c.until(() => c.received().length >= 1);
    expect(c.received()[0]).toBe('N'.charCodeAt(0));
    const frames = await c.login(alice, 'alice');
    expect(statusOf(frames[frames.length - 1]!)).toBe('I');
    c.end();
  });

  test('login, ParameterStatus relayed, our BackendKeyData, ReadyForQuery idle', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    const frames = await c.login(alice, 'alice');
    const codes = frames.map((f) => f.code);
    expect(codes).toContain(BackendCode.ParameterStatus);
    expect(codes.filter((x) => x === BackendCode.BackendKeyData)).toHaveLength(1);
    expect(statusOf(frames[frames.length - 1]!)).toBe('I');
    c.write(query('select 1'));
    const reply = await c.untilReady();
    expect(reply.map((f) => String.fromCharCode(f.code)).join('')).toBe('TDCZ');
    c.end();
  });

  test('protocol 3.1 gets NegotiateProtocolVersion and goes on as 3.0', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    c.write(
      startupMessage(
        new Map([
          ['user', 'alice'],
          ['database', 'demo'],
          ['_pq_.x', '1'],
        ]),
        1,
      ),
    );
    const first = await c.next();
    expect(first.code).toBe(BackendCode.NegotiateProtocolVersion);
    // Int32 newest minor version supported (0), Int32 count of unrecognized options, the names.
    expect(first.payload.readInt32BE(0)).toBe(0);
    expect(first.payload.readInt32BE(4)).toBe(1);
    expect(first.payload.subarray(8).toString()).toBe('_pq_.x\0');
    c.end();
  });

  test('replication connections are refused with 0A000', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    const e = await c.login({ ...alice, replication: 'database' }, 'alice').then(
      () => null,
      (x) => x,
    );
    expect(e?.code).toBe('0A000');
    expect(e?.severity).toBe('FATAL');
  });

  test('a startup parameter that is not listed is refused; a listed one reaches the upstream', async () => {
    const bad = await RawClient.connect(fx.proxy.port);
    const e = await bad.login({ ...alice, session_replication_role: 'replica' }, 'alice').then(
      () => null,
      (x) => x,
    );
    expect(e?.code).toBe('42501');
    const c = new pg.Client({
      connectionString: fx.proxy.url('dba'),
      application_name: 'pgw-test',
      options: '-c statement_timeout=1234',
    });
    await c.connect();
    const r = await c.query(
      "select current_setting('application_name') a, current_setting('statement_timeout') s",
    );
    expect(r.rows[0]).toEqual({ a: 'pgw-test', s: '1234ms' });
    await c.end();
  });

  test('client_encoding other than UTF8 is refused at start-up', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    const e = await c.login({ ...alice, client_encoding: 'SJIS' }, 'alice').then(
      () => null,
      (x) => x,
    );
    expect(e?.code).toBe('22023');
  });
});

describe('malformed and oversized messages', () => {
  test('a length word under 4 gets FATAL 08P01 and the proxy survives', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    await c.login(alice, 'alice');
    c.write(Buffer.from([0x51, 0, 0, 0, 2]));
    const err = errorOf(await c.next());
    expect(err.code).toBe('08P01');
    expect(err.severity).toBe('FATAL');
    await c.until(() => c.closed);
    expect(c.closed).toBe(true);
    await stillServes();
  });

  test('a message over max_message_bytes gets FATAL 54000 before its body is read', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    await c.login(alice, 'alice');
    const header = Buffer.from([0x51, 0, 0, 0, 0]);
    header.writeInt32BE(0x7ffffff0, 1);
    c.write(header);
    const err = errorOf(await c.next());
    expect(err.code).toBe('54000');
    await c.until(() => c.closed);
    await stillServes();
  });

  test('garbage instead of a startup packet', async () => {
    const c = await RawClient.connect(fx.proxy.port);
    c.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    const err = errorOf(await c.next());
    expect(err.code).toBe('08P01');
    await c.until(() => c.closed);
    await stillServes();
  });

  test('a client that closes mid-authentication leaves nothing behind', async () => {
    const before = fx.proxy.server.sessionCount();
    const c = await RawClient.connect(fx.proxy.port);
    c.write(startupMessage(new Map(Object.entries(alice))));
    await c.next();
    c.end();
    // The proxy sees the close when its event loop gets to it (later on a loaded machine): wait for it, bounded.
    const deadline = Date.now() + 10_000;
    while (fx.proxy.server.sessionCount() !== before && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(fx.proxy.server.sessionCount()).toBe(before);
  });
});

describe('limits and shutdown', () => {
  test('max_client_connections: one over the limit gets FATAL 53300', async () => {
    const cfg = demoConfigObject();
    cfg.limits = { max_client_connections: 2, auth_failure_delay_ms: 10 };
    const p = await startTestProxy(cfg);
    const a = await p.client('alice');
    const b = await p.client('alice');
    const c = new pg.Client({ connectionString: p.url('alice') });
    await expect(c.connect()).rejects.toMatchObject({ code: '53300' });
    await a.end();
    await b.end();
    await p.close();
  });

  test('graceful shutdown: a running statement finishes, an idle session gets 57P01', async () => {
    const p = await startTestProxy();
    const idle = await RawClient.connect(p.port);
    await idle.login({ user: 'dba', database: 'demo' }, 'dba');
    const busy = await p.client('dba');
    const running = busy.query('select pg_sleep(2.0061) is null as done');
    busy.on('error', () => {});
    // Close once the statement runs upstream: a session whose statement is still on its way is idle.
    await untilRunningUpstream('pg_sleep(2.0061)');
    const closing = p.server.close(5000);
    const err = errorOf(await idle.next());
    expect(err.code).toBe('57P01');
    expect((await running).rows[0].done).toBe(false);
    await closing;
    expect(p.server.sessionCount()).toBe(0);
  });
});

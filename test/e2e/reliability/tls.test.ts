// TLS can be required of clients (tls.mode: require), and pgwarden's upstream connections use sslmode/sslrootcert (issue 16 item 6).
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { EmbeddedServer } from '../../../src/embedded/postgres.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { startTlsPostgres, TLS_FILES } from '../../helpers/tls-postgres.js';

let upstream: EmbeddedServer;
let proxy: TestProxy;
const logLines: Record<string, unknown>[] = [];

beforeAll(async () => {
  upstream = await startTlsPostgres();
  const url = `postgres://${upstream.superuser}:${upstream.superuserPassword}@127.0.0.1:${upstream.port}/postgres`;
  const cfg = demoConfigObject();
  cfg.tls = { cert: TLS_FILES.cert, key: TLS_FILES.key, mode: 'require' };
  cfg.databases = {
    ...(cfg.databases as object),
    full: { url, sslmode: 'verify-full', sslrootcert: TLS_FILES.ca },
    ca: { url: url.replace('127.0.0.1', 'localhost'), sslmode: 'verify-ca', sslrootcert: TLS_FILES.ca },
    encrypted: { url: `${url}?sslmode=require` },
    plain: { url },
    wrongca: { url, sslmode: 'verify-full', sslrootcert: TLS_FILES.otherCa },
  };
  proxy = await startTestProxy(cfg, { logLines });
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  await upstream?.stop();
});

/** A pg client verifying the proxy's certificate as sslmode=verify-full does. */
function verifiedClient(database: string, user = 'dba'): pg.Client {
  return new pg.Client({
    connectionString: proxy.url(user, user, database),
    ssl: { ca: fs.readFileSync(TLS_FILES.ca), servername: 'localhost' },
  });
}

async function failure(c: pg.Client): Promise<pg.DatabaseError> {
  c.on('error', () => {});
  const e = await c.connect().then(
    () => null,
    (err: unknown) => err,
  );
  await c.end().catch(() => {});
  if (!e) throw new Error('connected');
  return e as pg.DatabaseError;
}

describe('tls.mode: require', () => {
  test('a client that does not encrypt is refused with FATAL 28000 and a hint', async () => {
    const e = await failure(new pg.Client({ connectionString: proxy.url('alice'), ssl: false }));
    expect(e.severity).toBe('FATAL');
    expect(e.code).toBe('28000');
    expect(e.message).toBe('connection requires TLS: user "alice", database "demo", no encryption');
    expect(e.hint).toContain('sslmode=require');
  });

  test('a client verifying the proxy certificate (verify-full) logs in and runs queries', async () => {
    const c = verifiedClient('demo', 'alice');
    await c.connect();
    expect((await c.query('select 1 as one')).rows[0].one).toBe(1);
    await c.end();
  });
});

describe('upstream sslmode', () => {
  const sslOfSession = 'select ssl from pg_stat_ssl where pid = pg_backend_pid()';

  for (const db of ['full', 'ca', 'encrypted']) {
    test(`${db}: the session and the catalog read run over TLS`, async () => {
      const c = verifiedClient(db);
      await c.connect();
      expect((await c.query(sslOfSession)).rows).toEqual([{ ssl: true }]);
      await c.end();
    });
  }

  test('sslmode disable against a server that refuses plaintext: the login fails, the client learns no reason', async () => {
    const e = await failure(verifiedClient('plain'));
    expect(e.code).toBe('08006');
    expect(e.message).toBe('pgwarden could not open a session on the upstream database; see the proxy log');
  });

  test('verify-full with a CA that did not sign the server certificate refuses the upstream', async () => {
    const e = await failure(verifiedClient('wrongca'));
    expect(e.code).toBe('08006');
    expect(e.message).toBe('could not connect to the upstream server');
    const line = logLines.filter((l) => l.event === 'upstream-login-failed').at(-1);
    expect(String(line?.err)).toMatch(/certificate/);
  });
});

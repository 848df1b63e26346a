// psql against tls.mode: require — sslmode=require and verify-full log in, sslmode=disable is refused (issue 16 item 6).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { psql } from '../helpers/psql.js';
import { TLS_FILES } from '../helpers/tls-postgres.js';

let proxy: TestProxy;
beforeAll(async () => {
  const cfg = demoConfigObject();
  cfg.tls = { cert: TLS_FILES.cert, key: TLS_FILES.key, mode: 'require' };
  proxy = await startTestProxy(cfg);
});
afterAll(async () => {
  await proxy.close();
});

const url = (host: string, params: string) => `postgres://alice:alice@${host}:${proxy.port}/demo?${params}`;

describe('psql through tls.mode: require', () => {
  test('sslmode=require logs in over TLS', async () => {
    const r = await psql(url('127.0.0.1', 'sslmode=require'), ['-tA', '-c', 'select 42', '-c', '\\conninfo']);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('42');
    expect(r.stdout).toContain('SSL connection (protocol: TLSv1.3');
  });

  test('sslmode=verify-full with the proxy’s CA logs in (host name checked)', async () => {
    const r = await psql(url('localhost', `sslmode=verify-full&sslrootcert=${TLS_FILES.ca}`), [
      '-tA',
      '-c',
      'select 42',
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('42');
  });

  test('sslmode=verify-full with another CA is refused by psql', async () => {
    const r = await psql(url('localhost', `sslmode=verify-full&sslrootcert=${TLS_FILES.otherCa}`), [
      '-c',
      'select 1',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('certificate verify failed');
  });

  test('sslmode=disable is refused with FATAL 28000 and the hint', async () => {
    const r = await psql(url('127.0.0.1', 'sslmode=disable'), ['-c', 'select 1']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      'FATAL:  connection requires TLS: user "alice", database "demo", no encryption',
    );
    expect(r.stderr).toContain('HINT:  Connect with sslmode=require');
  });
});

// TLS with psql 15: `pgwarden serve` with a certificate openssl made, psql with sslmode=require logs in over TLS 1.3.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import { demoConfigObject } from '../helpers/proxy.js';
import { psql } from '../helpers/psql.js';
import { serveProcess } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-tls-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `pgwarden serve` on `cfg`, its file in this suite's folder. */
const serve = (cfg: Record<string, unknown>) =>
  serveProcess(cfg, path.join(dir, `pgwarden-${Date.now()}.yaml`));

describe('pgwarden serve with tls', () => {
  test('TLS: psql with sslmode=require logs in over TLS', async () => {
    const key = path.join(dir, 'server.key');
    const crt = path.join(dir, 'server.crt');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        crt,
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
      ],
      {
        stdio: 'ignore',
      },
    );
    const cfg = demoConfigObject();
    cfg.tls = { cert: crt, key };
    const s = await serve(cfg);
    const r = await psql(`postgres://alice:alice@127.0.0.1:${s.port}/demo?sslmode=require`, [
      '-tA',
      '-c',
      'select 42',
    ]);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('42');
    const info = await psql(`postgres://alice:alice@127.0.0.1:${s.port}/demo?sslmode=require`, [
      '-c',
      '\\conninfo',
    ]);
    expect(info.stdout).toContain('SSL connection (protocol: TLSv1.3');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });
});

// The pgwarden command: exit code 2 on a bad config, superuser warning, SIGHUP reload, no TLS, SIGTERM, passwd, demo.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, test } from 'vitest';
import YAML from 'yaml';
import { freePort } from '../../src/embedded/postgres.js';
import { demoConfigObject, testEnv } from '../helpers/proxy.js';
import { BIN, serveProcess } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `pgwarden serve` on `cfg`, its file in this suite's folder. */
const serve = (cfg: Record<string, unknown>, file = path.join(dir, `pgwarden-${Date.now()}.yaml`)) =>
  serveProcess(cfg, file);

describe('pgwarden serve', () => {
  test('a bad config exits 2 listing every error with its path', () => {
    const file = path.join(dir, 'bad.yaml');
    const cfg = demoConfigObject();
    (cfg.roles as Record<string, { permissions: { effect: string }[] }>).analyst!.permissions[2]!.effect =
      'maybe';
    cfg.listen = 'nowhere';
    fs.writeFileSync(file, YAML.stringify(cfg));
    let status = 0;
    let stderr = '';
    try {
      execFileSync(process.execPath, [BIN, 'serve', '--config', file], { env: testEnv(), stdio: 'pipe' });
    } catch (e) {
      status = (e as { status: number }).status;
      stderr = String((e as { stderr: Buffer }).stderr);
    }
    expect(status).toBe(2);
    expect(stderr).toContain('roles.analyst.permissions[2].effect: expected "allow" | "deny"');
    expect(stderr).toContain('listen: must be host:port');
  });

  test('warns when the upstream login is a superuser', async () => {
    const pgInfo = inject('pg');
    const cfg = demoConfigObject();
    cfg.databases = {
      demo: {
        url: `postgres://${pgInfo.superuser}:${pgInfo.superuserPassword}@127.0.0.1:${pgInfo.port}/demo`,
      },
    };
    const s = await serve(cfg);
    const line = s.lines.find((l) => l.event === 'upstream-login');
    expect(String(line?.msg)).toBe(
      `database demo: the upstream login "${pgInfo.superuser}" is a superuser; use a role without superuser rights`,
    );
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  test('SIGHUP reloads; an invalid file keeps the old config; SIGTERM exits 0', async () => {
    const file = path.join(dir, 'reload.yaml');
    const cfg = demoConfigObject();
    const s = await serve(cfg, file);
    const url = (pw: string) => `postgres://alice:${pw}@127.0.0.1:${s.port}/demo`;
    const ok = async (pw: string) => {
      const c = new pg.Client({ connectionString: url(pw) });
      try {
        await c.connect();
        await c.end();
        return true;
      } catch (e) {
        if (process.env.DEBUG_CLI) console.log(pw, e, s.lines.slice(-5));
        return false;
      }
    };
    expect(await ok('alice')).toBe(true);
    (cfg.users as Record<string, { password: string }>).alice = { password: 'alice2' };
    fs.writeFileSync(file, YAML.stringify(cfg));
    s.child.kill('SIGHUP');
    await s.waitFor((l) => l.event === 'reload');
    expect(await ok('alice2')).toBe(true);
    expect(await ok('alice')).toBe(false);
    fs.writeFileSync(file, 'databases: [');
    s.child.kill('SIGHUP');
    await s.waitFor((l) => l.event === 'reload-failed');
    expect(await ok('alice2')).toBe(true);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  test('without TLS configured, a client requiring TLS is refused', async () => {
    const s = await serve(demoConfigObject());
    const c = new pg.Client({
      connectionString: `postgres://alice:alice@127.0.0.1:${s.port}/demo`,
      ssl: { rejectUnauthorized: false },
    });
    await expect(c.connect()).rejects.toThrow('The server does not support SSL connections');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });
});

describe('pgwarden passwd', () => {
  test('prints a SCRAM verifier that the config accepts', () => {
    const out = execFileSync(process.execPath, [BIN, 'passwd'], { input: 'hunter2\n' }).toString().trim();
    expect(out).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
  });
});

describe('pgwarden demo (npm start)', () => {
  test('starts PostgreSQL and the proxy, serves alice, and Ctrl-C exits 0', async () => {
    const data = path.join(dir, 'demo-data');
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    fs.chmodSync(dir, 0o755);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [BIN, 'demo', '--json', '--data', data, '--listen', `127.0.0.1:${port}`],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr?.on('data', () => {});
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const deadline = Date.now() + 60_000;
    while (!out.includes('Ctrl-C stops') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(out).toContain(`psql "postgres://alice:alice@127.0.0.1:${port}/demo"`);
    const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${port}/demo` });
    await c.connect();
    const r = await c.query<{ n: number }>('select count(*)::int as n from users');
    await c.end();
    expect(r.rows[0]?.n).toBeGreaterThanOrEqual(12);
    child.kill('SIGINT');
    expect(await exited).toBe(0);
  });
});

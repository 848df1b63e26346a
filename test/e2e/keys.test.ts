// `pgwarden keys`: create prints a token once, the key logs in through the proxy with its roles; rotate, revoke, list (inline keys too), no upstream needed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { loadConfig } from '../../src/policy/config-load.js';
import type { ProxyServer } from '../../src/proxy/proxy-port.js';
import { startProxy } from '../../src/proxy/server.js';
import { demoConfigObject, testEnv } from '../helpers/proxy.js';

const BIN = path.resolve(import.meta.dirname, '../../bin/pgwarden.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-keys-'));
const config = path.join(dir, 'pgwarden.yaml');
const keysFile = path.join(dir, 'pgwarden.keys.yaml');

function keys(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, 'keys', ...args, '--config', config], {
    env: testEnv(),
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

interface Created {
  id: string;
  token: string;
  roles: string[];
  expires_at: string | null;
  previous_expires_at?: string;
}

let proxy: ProxyServer;

async function connect(user: string, password: string): Promise<pg.Client> {
  const c = new pg.Client({
    connectionString: `postgres://${user}:${encodeURIComponent(password)}@127.0.0.1:${proxy.address.port}/demo`,
  });
  await c.connect();
  return c;
}

async function loginError(user: string, password: string): Promise<string | undefined> {
  try {
    const c = await connect(user, password);
    await c.end();
    return undefined;
  } catch (e) {
    return (e as { code?: string }).code;
  }
}

function reload(): void {
  proxy.reload(loadConfig(config, testEnv()));
}

beforeAll(async () => {
  const obj = demoConfigObject();
  obj.keys_file = 'pgwarden.keys.yaml';
  fs.writeFileSync(config, YAML.stringify(obj));
  proxy = await startProxy(loadConfig(config, testEnv()), pino({ level: 'silent' }));
});

afterAll(async () => {
  await proxy?.close(500);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('pgwarden keys', () => {
  let created: Created;

  test('list before any key is made: the inline key, marked inline; no upstream variables needed', () => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PGWARDEN_')));
    const r = spawnSync(process.execPath, [BIN, 'keys', 'list', '--config', config, '--json'], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      {
        id: 'agent',
        roles: ['analyst'],
        status: 'active',
        inline: true,
        created_at: null,
        expires_at: null,
        previous_token_valid_until: null,
        description: null,
      },
    ]);
    const text = keys(['list']);
    expect(text.stdout.split('\n')[1]).toMatch(/^agent +analyst +active +inline +- +never/);
    expect(keys(['revoke', 'agent'])).toMatchObject({
      code: 2,
      stderr: `pgwarden keys: key agent is defined inline in ${config} (api_keys): edit it there\n`,
    });
  });

  test('create prints the token once and stores only its verifier', () => {
    const r = keys(['create', '--role', 'analyst', '--expires', '30d', '--description', 'ci', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    created = JSON.parse(r.stdout) as Created;
    expect(created.id).toMatch(/^pgw_[A-Za-z0-9]{16}$/);
    expect(created.token).toMatch(/^pgwt_[A-Za-z0-9_-]{43}$/);
    expect(created.roles).toEqual(['analyst']);
    const file = fs.readFileSync(keysFile, 'utf8');
    expect(file).toContain(created.id);
    expect(file).not.toContain(created.token);
    expect(file).toContain('SCRAM-SHA-256$4096:');
    expect((fs.statSync(keysFile).mode & 0o777).toString(8)).toBe('600');
  });

  test('create refuses an unknown role, an expiry beyond a year, and a config without keys_file (exit 2)', () => {
    expect(keys(['create', '--role', 'ghost'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('"ghost"'),
    });
    expect(keys(['create', '--role', 'analyst', '--expires', '400d'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('more than one year'),
    });
    const other = path.join(dir, 'nokeys.yaml');
    const withoutKeys = demoConfigObject();
    delete withoutKeys.keys_file;
    fs.writeFileSync(other, YAML.stringify(withoutKeys));
    const r = spawnSync(process.execPath, [BIN, 'keys', 'create', '--role', 'analyst', '--config', other], {
      env: testEnv(),
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('names no keys file');
  });

  test('the key logs in with its token after a reload and holds exactly its roles (email masked)', async () => {
    reload();
    const c = await connect(created.id, created.token);
    try {
      const r = await c.query('select id, email from users order by id limit 1');
      expect(r.rows[0]?.email).toBe('*****');
    } finally {
      await c.end();
    }
    expect(await loginError(created.id, 'pgwt_wrong')).toBe('28P01');
  });

  test('rotate: the new token logs in; the old one stays valid for 24 hours', async () => {
    const r = keys(['rotate', created.id, '--json']);
    expect(r.code).toBe(0);
    const rotated = JSON.parse(r.stdout) as Created;
    expect(rotated.token).not.toBe(created.token);
    const until = Date.parse(rotated.previous_expires_at ?? '');
    expect(until - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    expect(until - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    reload();
    const c = await connect(created.id, rotated.token);
    await c.end();
    // The previous token still logs in during its 24-hour window (one SCRAM exchange, both proofs).
    const old = await connect(created.id, created.token);
    await old.end();
    const list = keys(['list', '--json']);
    expect(JSON.parse(list.stdout)).toEqual([
      expect.objectContaining({
        id: created.id,
        status: 'active',
        previous_token_valid_until: rotated.previous_expires_at,
      }),
      expect.objectContaining({ id: 'agent', inline: true }),
    ]);
    created = { ...created, token: rotated.token };
  });

  test('revoke: after a reload the key can no longer log in', async () => {
    const open = await connect(created.id, created.token);
    const closed = new Promise<string | undefined>((resolve) =>
      open.on('error', (e: Error) => resolve((e as pg.DatabaseError).code)),
    );
    const r = keys(['revoke', created.id]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Revoked API key ${created.id}.`);
    reload();
    // The open session of the revoked key is closed with FATAL 28000 (issue 4).
    expect(await closed).toBe('28000');
    expect(await loginError(created.id, created.token)).toBe('28P01');
    const list = keys(['list']);
    expect(list.stdout).toMatch(new RegExp(`${created.id}\\s+analyst\\s+revoked`));
    expect(keys(['rotate', created.id]).code).toBe(2);
  });
});

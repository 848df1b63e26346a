// The admin API on `serve --admin`: login, CSRF, app-level gating (403), grant limits, 409 and 422, Bearer keys, a change seen by two instances, replay, audit.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PolicyStore } from '../../src/policy/policy-store.js';
import { waitForFileText } from '../helpers/audit-file.js';
import { createDemoStore, type StoreDatabase, storeInstanceConfig } from '../helpers/policy-store-db.js';
import { type Served, serveProcess } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-admin-'));
const auditFile = path.join(dir, 'audit.jsonl');
let db: StoreDatabase;
const served: Served[] = [];
let api = '';

/** A logged-in browser: its cookies and CSRF token. */
interface Browser {
  cookie: string;
  csrf: string;
}

async function call(
  method: string,
  url: string,
  opts: { who?: Browser; bearer?: string; body?: unknown; ifMatch?: number | string; csrf?: boolean } = {},
): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.who) {
    headers.cookie = opts.who.cookie;
    if (opts.csrf !== false) headers['x-csrf-token'] = opts.who.csrf;
  }
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
  if (opts.ifMatch !== undefined) headers['if-match'] = `"${opts.ifMatch}"`;
  const r = await fetch(`${api}${url}`, {
    method,
    headers,
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await r.text();
  return {
    status: r.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
    headers: r.headers,
  };
}

async function login(user: string, password = user): Promise<Browser> {
  const r = await fetch(`${api}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user, password }),
  });
  expect(r.status).toBe(200);
  const setCookies = r.headers.getSetCookie();
  const session = setCookies.find((c) => c.startsWith('pgwarden_session='));
  expect(session).toMatch(/HttpOnly/);
  expect(session).toMatch(/SameSite=Strict/);
  const cookie = setCookies.map((c) => c.split(';')[0]).join('; ');
  const body = (await r.json()) as { csrf_token: string };
  return { cookie, csrf: body.csrf_token };
}

beforeAll(async () => {
  db = (await createDemoStore(dir)).store;
  // bob (role support) may edit roles; alice (analyst) holds no app-level action.
  const store = await PolicyStore.open(db.url);
  await store.commit({ author: 'test' }, ({ current }) => {
    const p = structuredClone(current.policy);
    p.roles.support!.permissions.push({ effect: 'allow', actions: ['workspace_roles'] });
    return p;
  });
  await store.close();
  const cfg = storeInstanceConfig(db.url, { audit: { file: auditFile } });
  served.push(await serveProcess(cfg, path.join(dir, 'one.yaml'), ['--admin', '127.0.0.1:0']));
  served.push(await serveProcess(storeInstanceConfig(db.url), path.join(dir, 'two.yaml')));
  const line = await served[0]!.waitFor((l) => l.event === 'admin-listening');
  api = `http://127.0.0.1:${line.port as number}`;
}, 120_000);

afterAll(async () => {
  for (const s of served) s.child.kill('SIGTERM');
  await Promise.all(served.map((s) => s.exited));
  await db.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('admin API', () => {
  test('OpenAPI document, /healthz, and 401 without a caller', async () => {
    const doc = await call('GET', '/api/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe('3.0.3');
    const paths = doc.body.paths as Record<string, Record<string, { requestBody?: unknown }>>;
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining(['/api/roles/{name}', '/api/api-keys', '/api/replay', '/api/audit']),
    );
    expect(JSON.stringify(paths['/api/roles/{name}']!.put!.requestBody)).toContain('"effect"');
    const health = await call('GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', store: { state: 'listening', version: 2 } });
    expect(health.body.epoch).toMatch(/^[0-9a-f]{16}$/);
    expect((await call('GET', '/api/roles')).status).toBe(401);
  });

  test('403 names the missing action; CSRF is required for a cookie caller', async () => {
    const alice = await login('alice');
    const r = await call('GET', '/api/roles', { who: alice });
    expect(r.status).toBe(403);
    expect(r.body).toMatchObject({ error: 'forbidden', action: 'workspace_roles' });
    const keys = await call('POST', '/api/api-keys', { who: alice, body: { roles: ['analyst'] } });
    expect(keys.body).toMatchObject({ error: 'forbidden', action: 'workspace_api_keys' });
    const session = await call('GET', '/api/session', { who: alice });
    expect(session.body).toMatchObject({ user: 'alice', roles: ['analyst'], actions: [] });
    const bob = await login('bob');
    const noCsrf = await call('PUT', '/api/settings', {
      who: bob,
      body: { name: 'x' },
      ifMatch: 2,
      csrf: false,
    });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.error).toBe('csrf');
  });

  test('a rule changed by a user with workspace_roles reaches sessions on both instances', async () => {
    const clients: pg.Client[] = [];
    try {
      for (const s of served) {
        const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${s.port}/demo` });
        await c.connect();
        clients.push(c);
        expect((await c.query('SELECT name FROM users ORDER BY id LIMIT 1')).rows[0].name).not.toBe('*****');
      }
      const bob = await login('bob');
      const got = await call('GET', '/api/roles/analyst', { who: bob });
      expect(got.status).toBe(200);
      expect(got.headers.get('etag')).toBe('"2"');
      const role = got.body.role as { permissions: Record<string, unknown>[] };
      const hideName = {
        ...role,
        permissions: [
          ...role.permissions,
          {
            effect: 'deny',
            actions: ['SEE'],
            database: 'demo',
            schema: 'public',
            table: 'users',
            column: 'name',
          },
        ],
      };
      const put = await call('PUT', '/api/roles/analyst', { who: bob, body: hideName, ifMatch: 2 });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({ version: 3, committed: true });
      const committed = Date.now();
      for (const c of clients) {
        for (;;) {
          if ((await c.query('SELECT name FROM users ORDER BY id LIMIT 1')).rows[0].name === '*****') break;
          if (Date.now() - committed > 20_000) throw new Error('not reloaded within 20 s');
          await new Promise((r) => setTimeout(r, 20));
        }
      }
      const reload = await served[1]!.waitFor((l) => l.event === 'policy-reload' && l.version === 3);
      // Soon after the commit (NOTIFY, or the next 1 s heartbeat check); slack for a loaded machine.
      expect((reload.time as number) - committed).toBeLessThan(10_000);

      // The loser of two edits from version 2 gets 409.
      const again = await call('PUT', '/api/roles/analyst', { who: bob, body: role, ifMatch: 2 });
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ error: 'conflict', current_version: 3 });
      // Without If-Match: 428.
      expect((await call('PUT', '/api/roles/analyst', { who: bob, body: role })).status).toBe(428);
    } finally {
      for (const c of clients) await c.end().catch(() => {});
    }
  });

  test('an editor cannot grant what it does not hold; bad input is 422 with paths and changes nothing', async () => {
    const bob = await login('bob');
    const got = await call('GET', '/api/roles/analyst', { who: bob });
    const version = Number(got.body.version);
    const role = got.body.role as { tenants: string[]; permissions: Record<string, unknown>[] };
    const unhide = { ...role, permissions: role.permissions.filter((p) => p.column !== 'email') };
    const beyond = await call('PUT', '/api/roles/analyst', { who: bob, body: unhide, ifMatch: version });
    expect(beyond.status).toBe(403);
    expect(beyond.body.beyond).toEqual([
      'cannot grant SEE on demo.public.users.email: bob does not hold it there',
    ]);
    const manage = await call('PUT', '/api/roles/analyst', {
      who: bob,
      body: {
        ...role,
        permissions: [{ effect: 'allow', actions: ['MANAGE'], database: 'demo', schema: 'public' }],
      },
      ifMatch: version,
    });
    expect(manage.status).toBe(422);
    expect(manage.body.issues).toEqual([
      {
        path: 'body.permissions[0].actions',
        message:
          'MANAGE is granted on a database; a MANAGE rule scoped to a schema, table or column never matches',
      },
    ]);
    const dangling = await call('PUT', '/api/roles/analyst', {
      who: bob,
      body: { ...role, tenants: [...role.tenants, 'g/nobody'] },
      ifMatch: version,
    });
    expect(dangling.status).toBe(422);
    expect(dangling.body.issues).toEqual([
      { path: 'policy.roles.analyst.tenants[1]', message: 'names no group "nobody"' },
    ]);
    const after = await call('GET', '/api/roles/analyst', { who: bob });
    expect(after.body.version).toBe(version);
    expect(after.body.role).toEqual(role);
  });

  test('API keys: created by a workspace admin, the token shown once, Bearer gated by the key roles', async () => {
    const dba = await login('dba');
    const made = await call('POST', '/api/api-keys', {
      who: dba,
      body: { roles: ['support'], expires: '30d' },
    });
    expect(made.body).toMatchObject({ committed: true });
    const token = made.body.token as string;
    expect(token).toMatch(/^pgwt_/);
    expect(made.body.key).not.toHaveProperty('scram');
    const list = await call('GET', '/api/api-keys', { who: dba });
    expect(JSON.stringify(list.body)).not.toContain('SCRAM-SHA-256');
    expect((await call('GET', '/api/roles', { bearer: token })).status).toBe(200);
    const denied = await call('GET', '/api/users', { bearer: token });
    expect(denied.body).toMatchObject({ error: 'forbidden', action: 'workspace_users' });
    expect((await call('GET', '/api/roles', { bearer: 'pgwt_wrong' })).status).toBe(401);
  });

  test('replay over the API lists the statements a proposed policy changes', async () => {
    const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${served[0]!.port}/demo` });
    await c.connect();
    await c.query('SELECT id, name FROM orgs WHERE id > 0');
    await c.query('SELECT id FROM users');
    await c.end();
    const dba = await login('dba');
    const roles = (await call('GET', '/api/roles', { who: dba })).body.roles as Record<
      string,
      { permissions: unknown[] }
    >;
    const stricter = structuredClone(roles);
    stricter.analyst!.permissions.push({
      effect: 'deny',
      actions: ['SEE'],
      database: 'demo',
      schema: 'public',
      table: 'orgs',
      column: 'name',
    });
    await waitForFileText(auditFile, '"sql":"SELECT id FROM users"');
    const r = await call('POST', '/api/replay', { who: dba, body: { policy: { roles: stricter } } });
    expect(r.status).toBe(200);
    const changes = r.body.changes as { identity: string; sql: string; change: string; after: unknown }[];
    expect(changes.map((x) => [x.identity, x.sql, x.change, x.after])).toEqual([
      [
        'alice',
        'SELECT id, name FROM orgs WHERE id > $1',
        'masks-added',
        { decision: 'masked', masked: ['name'] },
      ],
    ]);
    expect(r.body.counts).toMatchObject({ 'masks-added': 1, 'allowed→refused': 0 });
  });

  test('admin actions are audited with before and after epochs; repeated failed logins lock the user', async () => {
    await waitForFileText(auditFile, '"admin":true');
    // The statement line comes from another instance's buffer than the admin lines: wait for it too.
    const written = await waitForFileText(auditFile, '"sql":"SELECT id FROM users"');
    const lines = written
      .split('\n')
      .filter((l) => l.includes('"admin":true'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const put = lines.find((l) => l.route === '/api/roles/:name' && l.status === 200);
    expect(put).toMatchObject({
      identity: 'bob',
      via: 'session',
      method: 'PUT',
      action: 'workspace_roles',
      version: 3,
    });
    expect(put!.before_epoch).toMatch(/^[0-9a-f]{16}$/);
    expect(put!.after_epoch).not.toBe(put!.before_epoch);
    expect(
      lines.some((l) => l.status === 403 && l.identity === 'alice' && l.action === 'workspace_roles'),
    ).toBe(true);
    const statement = written.split('\n').find((l) => l.includes('"sql":"SELECT id FROM users"'));
    expect(JSON.parse(statement!)).toMatchObject({
      epoch: expect.stringMatching(/^[0-9a-f]{16}$/),
      searchPath: ['public'],
    });

    for (let i = 0; i < 5; i++) {
      const bad = await call('POST', '/api/login', { body: { user: 'bob', password: 'wrong' } });
      expect(bad.status).toBe(401);
    }
    const locked = await call('POST', '/api/login', { body: { user: 'bob', password: 'bob' } });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

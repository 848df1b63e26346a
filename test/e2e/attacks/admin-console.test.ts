// Attacks on the admin API and web console: catalog names of a database the caller may not open, "try a statement" running nothing, paths out of the console, headers, cookies, CSRF, sessions, lock-out, tokens shown once.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONSOLE_CSP } from '../../../src/admin/console-assets.js';
import { policyImport } from '../../../src/policy/policy-command.js';
import { apiRequest } from '../../helpers/admin-instance.js';
import { waitForFileText } from '../../helpers/audit-file.js';
import {
  createStoreDatabase,
  storeInstanceConfig,
  superuserUrl,
  writeConfig,
} from '../../helpers/policy-store-db.js';
import { demoConfigObject, testEnv } from '../../helpers/proxy.js';
import { type Served, serveProcess } from '../../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-console-attacks-'));
const auditFile = path.join(dir, 'audit.jsonl');
/** A table name that runs script where a page renders names as HTML. */
const XSS_TABLE = '<img src=x onerror=alert(1)>';
let store: Awaited<ReturnType<typeof createStoreDatabase>>;
let vault: Awaited<ReturnType<typeof createStoreDatabase>>;
let served: Served;
let api = '';

interface Session {
  cookie: string;
  csrf: string;
}

async function login(
  user: string,
  password = user,
): Promise<{ status: number; session?: Session; setCookie: string[] }> {
  const r = await fetch(`${api}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user, password }),
  });
  const setCookie = r.headers.getSetCookie();
  const body = (await r.json()) as { csrf_token?: string };
  if (r.status !== 200) return { status: r.status, setCookie };
  const cookie = setCookie.map((c) => c.split(';')[0]).join('; ');
  return { status: 200, session: { cookie, csrf: body.csrf_token ?? '' }, setCookie };
}

async function call(
  method: string,
  url: string,
  who?: Session | { bearer: string },
  body?: unknown,
  opts: { csrf?: string | null } = {},
) {
  const headers: Record<string, string> = {};
  if (who && 'bearer' in who) headers.authorization = `Bearer ${who.bearer}`;
  else if (who) {
    headers.cookie = who.cookie;
    const csrf = opts.csrf === undefined ? who.csrf : opts.csrf;
    if (csrf !== null) headers['x-csrf-token'] = csrf;
  }
  return apiRequest(api, method, url, headers, body);
}

/** A GET with the path exactly as written (fetch would resolve `..` and re-encode). */
function rawGet(p: string, cookie?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(api);
    http
      .request(
        { host: u.hostname, port: u.port, path: p, method: 'GET', headers: cookie ? { cookie } : {} },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => {
            text += d.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      )
      .on('error', reject)
      .end();
  });
}

const sessions: Record<string, Session> = {};
async function as(user: string): Promise<Session> {
  if (!sessions[user]) {
    const r = await login(user);
    expect(r.status).toBe(200);
    sessions[user] = r.session as Session;
  }
  return sessions[user] as Session;
}

beforeAll(async () => {
  Object.assign(process.env, testEnv());
  store = await createStoreDatabase();
  vault = await createStoreDatabase();
  const c = new pg.Client({ connectionString: vault.url });
  await c.connect();
  await c.query(`CREATE TABLE "${XSS_TABLE}" (id int, "<script>alert(2)</script>" text)`);
  await c.query('CREATE TABLE payroll (id int, salary int)');
  await c.end();
  // The demo policy, with eve, who edits roles and may open demo but not vault, and carol.
  const policy = demoConfigObject();
  delete policy.keys_file;
  (policy.users as Record<string, unknown>).eve = { password: 'eve' };
  (policy.users as Record<string, unknown>).carol = { password: 'carol' };
  (policy.roles as Record<string, unknown>).editor = {
    description: 'Edits roles; reads demo',
    tenants: ['u/eve'],
    permissions: [
      { effect: 'allow', actions: ['workspace_roles'] },
      { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
    ],
  };
  const instance = storeInstanceConfig(store.url, { audit: { file: auditFile } });
  instance.databases = {
    ...(instance.databases as Record<string, unknown>),
    vault: { url: superuserUrl(vault.name) },
  };
  const policyFile = writeConfig(dir, 'policy.yaml', { ...policy, databases: instance.databases });
  const importFile = writeConfig(dir, 'import.yaml', instance);
  expect((await policyImport({ config: importFile, file: policyFile })).exitCode).toBe(0);
  served = await serveProcess(instance, path.join(dir, 'one.yaml'), ['--admin', '127.0.0.1:0']);
  const line = await served.waitFor((l) => l.event === 'admin-listening');
  api = `http://127.0.0.1:${line.port as number}`;
}, 120_000);

afterAll(async () => {
  served?.child.kill('SIGTERM');
  await served?.exited;
  await store?.drop();
  await vault?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('admin console attacks', () => {
  test('the catalog tree names no table of a database the caller may not open (eve: workspace_roles, nothing on vault)', async () => {
    const eve = await as('eve');
    expect((await call('GET', '/api/catalog', eve)).body.databases).toEqual(['demo']);
    const hidden = await call('GET', '/api/catalog/vault', eve);
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ error: 'not-found', message: 'the config lists no database "vault"' });
    expect(hidden.text).not.toContain('payroll');
    expect((await call('GET', '/api/catalog/demo', eve)).status).toBe(200);
    // The workspace admin sees both; a hostile table name comes back as data, to be shown as text.
    const dba = await as('dba');
    expect((await call('GET', '/api/catalog', dba)).body.databases).toEqual(['demo', 'vault']);
    const tree = await call('GET', '/api/catalog/vault', dba);
    const tables = (tree.body.schemas as { tables: { name: string; columns: { name: string }[] }[] }[])[0]!
      .tables;
    expect(tables.map((t) => t.name)).toEqual([XSS_TABLE, 'payroll']);
    expect(tables[0]!.columns.map((c) => c.name)).toEqual(['id', '<script>alert(2)</script>']);
  });

  test('"try a statement" on a database the caller may not open names none of its columns, even checked as dba', async () => {
    const eve = await as('eve');
    const hidden = await call('POST', '/api/check', eve, {
      user: 'dba',
      database: 'vault',
      sql: 'SELECT * FROM payroll',
    });
    expect(hidden.status).toBe(422);
    expect(hidden.body).toEqual({
      error: 'invalid',
      message: 'database "vault" is not in the config (demo)',
    });
    // Without a database, the only one eve may open is taken: demo, which has no payroll.
    const dflt = await call('POST', '/api/check', eve, { user: 'dba', sql: 'SELECT * FROM payroll' });
    expect(dflt.status).toBe(200);
    expect(dflt.body.database).toBe('demo');
    expect(dflt.text).not.toMatch(/salary|vault/);
  });

  test('"try a statement" analyses and decides, never runs the statement upstream', async () => {
    const dba = await as('dba');
    const r = await call('POST', '/api/check', dba, {
      user: 'dba',
      database: 'vault',
      sql: 'CREATE TABLE attack_marker (x int); INSERT INTO payroll VALUES (1, 1); SELECT pg_sleep(30)',
    });
    expect(r.status).toBe(200);
    expect((r.body.statements as { verdict: string }[]).map((s) => s.verdict)).toHaveLength(3);
    const c = new pg.Client({ connectionString: vault.url });
    await c.connect();
    expect((await c.query("SELECT to_regclass('attack_marker') AS t")).rows[0].t).toBeNull();
    expect((await c.query('SELECT count(*)::int AS n FROM payroll')).rows[0].n).toBe(0);
    await c.end();
  }, 20_000);

  test('without audit_read: no audit log, no history, no dry run (its statements are audit text)', async () => {
    const eve = await as('eve');
    for (const [method, url, body] of [
      ['GET', '/api/audit', undefined],
      ['GET', '/api/audit?admin=false&limit=1000', undefined],
      ['GET', '/api/history', undefined],
      ['POST', '/api/replay', { policy: { roles: {} } }],
    ] as const) {
      const r = await call(method, url, eve, body);
      expect(r.status).toBe(403);
      expect(r.body).toMatchObject({ error: 'forbidden', action: 'audit_read' });
    }
    // Nor the pages of other actions.
    for (const [url, action] of [
      ['/api/users', 'workspace_users'],
      ['/api/api-keys', 'workspace_api_keys'],
      ['/api/settings', 'workspace_settings'],
      ['/api/groups', 'workspace_groups'],
    ] as const)
      expect((await call('GET', url, eve)).body).toMatchObject({ action });
  });

  test('paths out of the console or around the caller check read nothing', async () => {
    const paths = [
      '/console/../../etc/passwd',
      '/console/..%2f..%2f..%2f..%2fetc%2fpasswd',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/%252e%252e/%252e%252e/package.json',
      '/console/..%5c..%5cpackage.json',
      '/console/....//....//package.json',
      '/console/%c0%ae%c0%ae/package.json',
      '/console/app.js%00.html',
      '/console/../../src/admin/admin-auth.ts',
    ];
    for (const p of paths) {
      const r = await rawGet(p);
      expect([400, 403, 404], p).toContain(r.status);
      expect(r.text, p).not.toMatch(/root:|"pgwarden"|SESSION_COOKIE/);
    }
    // The console's paths are served without a caller; none of them reaches an API route.
    for (const p of [
      '/console/../api/audit',
      '/console/..%2fapi%2faudit',
      '/console/%2e%2e/api/users',
      '//api/audit',
      '/api/audit/',
      '/API/audit',
      '/api//audit',
      '/api/audit;x',
      '/healthz/../api/audit',
      '/api/login/../audit',
      '/api/openapi.json/../audit',
    ]) {
      const r = await rawGet(p);
      expect(r.status, p).not.toBe(200);
      expect(r.text, p).not.toContain('entries');
    }
  });

  test('every answer forbids framing and sniffing and carries the strict CSP; the session cookie is HttpOnly and SameSite=Strict', async () => {
    for (const url of ['/console/', '/console/app.js', '/console/nope.js', '/api/session', '/healthz', '/']) {
      const r = await call('GET', url);
      expect(r.headers.get('content-security-policy'), url).toBe(CONSOLE_CSP);
      expect(r.headers.get('x-frame-options'), url).toBe('DENY');
      expect(r.headers.get('x-content-type-options'), url).toBe('nosniff');
    }
    expect(CONSOLE_CSP).toMatch(/frame-ancestors 'none'/);
    expect(CONSOLE_CSP).toMatch(/script-src 'self';/);
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval/);
    const r = await login('bob');
    const session = r.setCookie.find((c) => c.startsWith('pgwarden_session='));
    expect(session).toMatch(/; HttpOnly/i);
    expect(session).toMatch(/; SameSite=Strict/i);
    expect(session).not.toMatch(/; Secure/i); // no TLS on this instance
  });

  test('a state change of a cookie caller needs its own CSRF token', async () => {
    const dba = await as('dba');
    const bob = await as('bob');
    const body = { roles: ['analyst'] };
    expect((await call('POST', '/api/api-keys', dba, body, { csrf: null })).status).toBe(403);
    expect((await call('POST', '/api/api-keys', dba, body, { csrf: bob.csrf })).body).toMatchObject({
      error: 'csrf',
    });
    expect((await call('POST', '/api/api-keys', dba, body, { csrf: 'x' })).status).toBe(403);
  });

  test('an API key token is in its creation answer only: not in the list, nor the audit log', async () => {
    const dba = await as('dba');
    const made = await call('POST', '/api/api-keys', dba, { roles: ['analyst'], description: 'attack' });
    expect(made.status).toBe(200);
    const token = made.body.token as string;
    expect(token.length).toBeGreaterThan(20);
    const list = await call('GET', '/api/api-keys', dba);
    expect(list.text).not.toContain(token);
    expect(list.text).not.toMatch(/scram|SCRAM-SHA-256\$/);
    const rotated = await call('POST', `/api/api-keys/${(made.body.key as { id: string }).id}/rotate`, dba);
    const second = rotated.body.token as string;
    expect((await call('GET', '/api/api-keys', dba)).text).not.toContain(second);
    // The key works as a Bearer caller (analyst holds no app-level action: 403, not 401).
    expect((await call('GET', '/api/roles', { bearer: second })).status).toBe(403);
    // A marker written after every request above: once its line is in the file, so are theirs
    // (one audit stream, written in order, in batches), and the absence of the tokens means something.
    const id = (made.body.key as { id: string }).id;
    expect((await call('POST', `/api/api-keys/${id}/revoke`, dba)).status).toBe(200);
    const audit = await waitForFileText(auditFile, `revoke API key ${id}`);
    expect(audit).toContain(`rotate API key ${id}`);
    expect(audit).not.toContain(token);
    expect(audit).not.toContain(second);
  });

  test('logout ends the session on the server; a password reset ends the sessions taken before it', async () => {
    const first = await login('alice');
    const alice = first.session as Session;
    expect((await call('GET', '/api/session', alice)).status).toBe(200);
    expect((await call('POST', '/api/logout', alice)).status).toBe(200);
    expect((await call('GET', '/api/session', alice)).status).toBe(401);

    const before = (await login('carol')).session as Session;
    expect((await call('GET', '/api/session', before)).status).toBe(200);
    const dba = await as('dba');
    const reset = await call('POST', '/api/users/carol/password', dba, { password: 'carol-new-password' });
    expect(reset.status).toBe(200);
    expect((await call('GET', '/api/session', before)).status).toBe(401);
    expect((await login('carol')).status).toBe(401);
    const after = (await login('carol', 'carol-new-password')).session as Session;
    expect((await call('GET', '/api/session', after)).status).toBe(200);
  });

  test('five failed logins lock the name, the right password included', async () => {
    for (let i = 0; i < 5; i++) expect((await login('bob', `wrong-${i}`)).status).toBe(401);
    const locked = await login('bob', 'bob');
    expect(locked.status).toBe(429);
    // Other names are not locked with it.
    expect((await login('alice')).status).toBe(200);
  });
});

// The admin API the web console adds: the live catalog tree, each grid cell's effective result with its rule, the audit's table filter, the console's own files.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { CONSOLE_CSP } from '../../src/admin/console-assets.js';
import { type AdminInstance, apiLogin, apiRequest, startAdminInstance } from '../helpers/admin-instance.js';
import { waitForFileText } from '../helpers/audit-file.js';
import type { Served } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-console-api-'));
const auditFile = path.join(dir, 'audit.jsonl');
let instance: AdminInstance;
let served: Served;
let api = '';
const cookies: Record<string, { cookie: string; csrf: string }> = {};

async function call(method: string, url: string, who?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (who) {
    cookies[who] ??= await apiLogin(api, who);
    headers.cookie = cookies[who]!.cookie;
    headers['x-csrf-token'] = cookies[who]!.csrf;
  }
  return apiRequest(api, method, url, headers, body);
}

beforeAll(async () => {
  instance = await startAdminInstance(dir, auditFile);
  served = instance.served;
  api = instance.base;
}, 120_000);

afterAll(async () => {
  await instance?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('admin API for the console', () => {
  test('the console is served without a caller, with its CSP, and / leads to it', async () => {
    const root = await call('GET', '/');
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
    const page = await fetch(`${api}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    expect(html).toContain('<script type="module" src="/console/app.js"></script>');
    expect(html).not.toMatch(/https?:\/\//);
    const js = await fetch(`${api}/console/grid.js`);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    // A path climbing out of the console's folder, as sent (fetch would normalize it).
    const traversal = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      http
        .get(`${api}/console/..%2f..%2f..%2fpackage.json`, (res) => {
          let text = '';
          res.on('data', (d: Buffer) => {
            text += d.toString();
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        })
        .on('error', reject);
    });
    expect([400, 403, 404]).toContain(traversal.status);
    expect(traversal.text).not.toContain('"pgwarden"');
    expect((await call('GET', '/api/catalog')).status).toBe(401);
  });

  test('the catalog tree of a database, read live, without system schemas', async () => {
    expect((await call('GET', '/api/catalog', 'dba')).body).toEqual({
      databases: ['demo'],
      app_actions: [
        'workspace_settings',
        'workspace_users',
        'workspace_roles',
        'workspace_groups',
        'workspace_api_keys',
        'audit_read',
        'connect_as_viewer',
      ],
      actions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MANAGE', 'SEE'],
    });
    const tree = await call('GET', '/api/catalog/demo', 'dba');
    expect(tree.status).toBe(200);
    const schemas = tree.body.schemas as {
      name: string;
      tables: { name: string; columns: { name: string }[] }[];
    }[];
    // Other test files make schemas of their own in the shared database meanwhile: only the
    // system ones (and pgwarden's own) must be left out.
    const names = schemas.map((s) => s.name);
    expect(names).toContain('public');
    expect(
      names.filter((n) => n.startsWith('pg_') || n === 'information_schema' || n === 'pgwarden'),
    ).toEqual([]);
    const orgs = schemas.find((s) => s.name === 'public')?.tables.find((t) => t.name === 'orgs');
    expect(orgs?.columns.map((c) => c.name)).toEqual(['id', 'name', 'secret']);
    expect((await call('GET', '/api/catalog/nope', 'dba')).status).toBe(404);
    const alice = await call('GET', '/api/catalog/demo', 'alice');
    expect(alice.status).toBe(403);
    expect(alice.body).toMatchObject({ error: 'forbidden', action: 'workspace_roles' });
  });

  test('effective results per cell with the deciding rule, for the role in force and as drafted', async () => {
    const name = { database: 'demo', schema: 'public', table: 'orgs', column: 'name' };
    const secret = { ...name, column: 'secret' };
    const now = await call('POST', '/api/roles/analyst/effective', 'dba', {
      scopes: [name, secret, { database: 'demo', schema: 'public' }],
    });
    expect(now.status).toBe(200);
    const rows = now.body.rows as { cells: Record<string, { granted: boolean; text: string } | null> }[];
    expect(rows[0]!.cells.SEE).toEqual({
      granted: true,
      rule: 'roles.analyst.permissions[0]',
      text: 'roles.analyst.permissions[0] (allow SELECT, SEE on demo)',
    });
    expect(rows[1]!.cells.SEE).toMatchObject({ granted: false, rule: 'roles.analyst.permissions[3]' });
    expect(rows[1]!.cells.MANAGE).toBeNull();
    expect(rows[2]!.cells.INSERT).toEqual({ granted: false, rule: null, text: 'no rule (default deny)' });
    expect((now.body.app as Record<string, unknown>).workspace_roles).toMatchObject({ granted: false });
    const drafted = await call('POST', '/api/roles/analyst/effective', 'dba', {
      permissions: [
        { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
        { effect: 'deny', actions: ['SEE'], ...name },
      ],
      scopes: [name, secret],
    });
    const d = drafted.body.rows as { cells: Record<string, { granted: boolean; rule: string } | null> }[];
    expect(d[0]!.cells.SEE).toMatchObject({ granted: false, rule: 'roles.analyst.permissions[1]' });
    expect(d[1]!.cells.SEE).toMatchObject({ granted: true, rule: 'roles.analyst.permissions[0]' });
    const bad = await call('POST', '/api/roles/analyst/effective', 'dba', {
      permissions: [{ effect: 'allow', actions: ['MANAGE'], database: 'demo', schema: 'public' }],
      scopes: [{ database: 'demo', table: 'orgs' }],
    });
    expect(bad.status).toBe(422);
    expect((bad.body.issues as { path: string }[]).map((i) => i.path)).toEqual([
      'body.permissions[0].actions',
      'body.scopes[0]',
    ]);
  });

  test('the audit filtered by table; a line with placeholders checks again with its lineage', async () => {
    const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${served.port}/demo` });
    await c.connect();
    await c.query('SELECT id, name FROM orgs WHERE id > 0');
    await c.query('SELECT id FROM users');
    await c.end();
    await waitForFileText(auditFile, 'FROM users');
    const r = await call('GET', '/api/audit?table=orgs&admin=false', 'dba');
    const entries = r.body.entries as { sql: string; identity: string; database: string }[];
    expect(entries.map((e) => e.sql)).toEqual(['SELECT id, name FROM orgs WHERE id > $1']);
    expect((await call('GET', '/api/audit?table=or%20gs', 'dba')).status).toBe(422);
    const check = await call('POST', '/api/check', 'dba', {
      user: entries[0]!.identity,
      database: entries[0]!.database,
      sql: entries[0]!.sql,
    });
    expect(check.status).toBe(200);
    const st = (check.body.statements as { verdict: string; columns: unknown[] }[])[0]!;
    expect(st.verdict).toBe('allowed');
    expect(st.columns).toEqual([
      { name: 'id', lineage: ['public.orgs.id'], masked: false },
      { name: 'name', lineage: ['public.orgs.name'], masked: false },
    ]);
  });
});

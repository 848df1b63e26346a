// A `serve --admin` child over a fresh policy store holding the demo policy, with its audit file; and a password login to its API.
import path from 'node:path';
import { createDemoStore, storeInstanceConfig } from './policy-store-db.js';
import { type Served, serveProcess } from './serve-process.js';

/** A running instance: its store, its process, the admin API's base URL. */
export interface AdminInstance {
  readonly served: Served;
  /** `http://127.0.0.1:<port>` of the admin API and the web console. */
  readonly base: string;
  /** Stops the process and drops the store database. */
  close(): Promise<void>;
}

/**
 * Imports the demo policy into a new store database, then starts `pgwarden serve --admin
 * 127.0.0.1:0` on it (config files in `dir`, audit lines in `auditFile`); resolves once the admin API
 * listens. Throws when the import fails.
 */
export async function startAdminInstance(dir: string, auditFile: string): Promise<AdminInstance> {
  const { store: db } = await createDemoStore(dir);
  const served = await serveProcess(
    storeInstanceConfig(db.url, { audit: { file: auditFile } }),
    path.join(dir, 'one.yaml'),
    ['--admin', '127.0.0.1:0'],
  );
  const line = await served.waitFor((l) => l.event === 'admin-listening');
  return {
    served,
    base: `http://127.0.0.1:${line.port as number}`,
    async close() {
      served.child.kill('SIGTERM');
      await served.exited;
      await db.drop();
    },
  };
}

/** Logs `user` in to the admin API at `base` (password = `password`): the cookie header and the CSRF token. */
export async function apiLogin(
  base: string,
  user: string,
  password = user,
): Promise<{ cookie: string; csrf: string }> {
  const r = await fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user, password }),
  });
  if (r.status !== 200) throw new Error(`login of ${user}: ${r.status}`);
  const cookie = r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { cookie, csrf: ((await r.json()) as { csrf_token: string }).csrf_token };
}

/** An admin API answer: its status, its body as JSON (`{ text }` when it is not JSON, `{}` when empty), the text, the headers. */
export interface ApiAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly text: string;
  readonly headers: Headers;
}

/**
 * Sends `method url` to the admin API at `base` with `headers`, and `body` as JSON (content-type
 * set) when given; redirects are not followed (a 302 is the answer). Rejects only when the request
 * cannot be sent.
 */
export async function apiRequest(
  base: string,
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<ApiAnswer> {
  if (body !== undefined) headers['content-type'] = 'application/json';
  const r = await fetch(`${base}${url}`, {
    method,
    headers,
    redirect: 'manual',
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    json = { text };
  }
  return { status: r.status, body: json, text, headers: r.headers };
}

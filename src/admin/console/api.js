// The console's client of the admin API: JSON, the session's CSRF token on every change, If-Match, errors as ApiError.

/** An answer of the admin API that is not 2xx: its status and JSON body (`{error, message, …}`). */
export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

let csrf = '';
let onExpired = () => {};

/** Sets the CSRF token (from the login answer or GET /api/session). */
export function setCsrf(token) {
  csrf = token ?? '';
}

/** What to do when the session has ended (a 401 on any call but the login). */
export function whenExpired(f) {
  onExpired = f;
}

/**
 * Calls the admin API. `opts.body` is sent as JSON; `opts.ifMatch` as `If-Match` (the version read).
 * Output: `{ data, version }` (the ETag's version, when the answer has one). Throws ApiError; a 401
 * calls the expiry handler first (the console then shows the login, keeping the draft).
 */
export async function api(method, url, opts = {}) {
  const headers = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
  if (opts.ifMatch !== undefined) headers['if-match'] = `"${opts.ifMatch}"`;
  const r = await fetch(url, {
    method,
    headers,
    credentials: 'same-origin',
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
  const text = await r.text();
  let data = {};
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = { message: text };
  }
  if (r.status === 401 && url !== '/api/login') onExpired();
  if (!r.ok) throw new ApiError(r.status, data);
  const etag = r.headers.get('etag');
  return { data, version: etag ? Number(etag.replace(/\D/g, '')) : data.version };
}

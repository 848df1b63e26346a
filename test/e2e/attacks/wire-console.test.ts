// Attacks on the wire admin console: what a hostile client puts in its startup parameters reaches an operator's psql as PostgreSQL would show it.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { wireConsole } from '../../../src/admin/wire-console.js';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';

let proxy: TestProxy;
const clients: pg.Client[] = [];

beforeAll(async () => {
  proxy = await startTestProxy(undefined, { proxy: { console: wireConsole } });
}, 60_000);

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await proxy?.close();
});

async function connect(user: string, database: string, applicationName?: string): Promise<pg.Client> {
  const c = new pg.Client({
    connectionString: proxy.url(user, user, database),
    ...(applicationName !== undefined ? { application_name: applicationName } : {}),
  });
  await c.connect();
  clients.push(c);
  return c;
}

describe('SHOW CLIENTS and SHOW SERVERS', () => {
  test('an application_name with terminal escapes and non-ASCII reads as PostgreSQL 15 keeps it (each such byte a ?)', async () => {
    // OSC 0 (set the terminal's title), a bell, CSI "clear screen", a newline, then UTF-8.
    const hostile = '\u001b]0;pwned\u0007\u001b[2J\nrm -rf ~ é';
    const alice = await connect('alice', 'demo', hostile);
    const server = (await alice.query<{ application_name: string }>('show application_name')).rows[0];
    expect(server?.application_name).toBe('?]0;pwned??[2J?rm -rf ~ ??');
    const admin = await connect('dba', 'pgwarden', hostile);
    const shown = await admin.query<{ user: string; application_name: string }>('SHOW CLIENTS');
    const row = shown.rows.find((r) => r.user === 'alice');
    expect(row?.application_name).toBe(server?.application_name);
    const servers = await admin.query<{ application_name: string }>('SHOW SERVERS');
    for (const r of [...shown.rows, ...servers.rows]) expect(r.application_name).toMatch(/^[\x20-\x7e]*$/);
  });
});

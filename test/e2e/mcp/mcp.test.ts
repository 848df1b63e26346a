// pgwarden mcp end to end: the SDK's client over stdio and Streamable HTTP, against the embedded PostgreSQL.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { testEnv } from '../../helpers/proxy.js';
import {
  BIN,
  callTool,
  connectHttp,
  connectStdio,
  type HttpServerChild,
  KEY_IDS,
  mcpConfigObject,
  ROOT,
  type StdioSession,
  startHttpChild,
  TOKENS,
  writeConfig,
} from './mcp-harness.js';

const file = writeConfig(mcpConfigObject());
afterAll(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));

/** The checks both transports must pass, for an analyst key client and a support key client. */
function sharedScenarios(clients: () => { analyst: Client; support: Client }) {
  test('tools are listed with input and output schemas; execute_statement is destructive', async () => {
    const { tools } = await clients().analyst.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'describe_table',
      'execute_query',
      'execute_statement',
      'explain_query',
      'list_databases',
      'list_tables',
    ]);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.type).toBe('object');
    }
    const q = tools.find((t) => t.name === 'execute_query')!;
    expect(Object.keys(q.inputSchema.properties ?? {}).sort()).toEqual([
      'database',
      'max_rows',
      'params',
      'sql',
    ]);
    expect(q.inputSchema.required).toEqual(['database', 'sql']);
    expect(q.annotations?.readOnlyHint).toBe(true);
    const w = tools.find((t) => t.name === 'execute_statement')!;
    expect(w.annotations?.destructiveHint).toBe(true);
    expect(w.annotations?.readOnlyHint).toBe(false);
  });

  test('list_databases: only the database a role names, with a summary', async () => {
    const r = await callTool(clients().analyst, 'list_databases');
    expect(r.isError, r.text).toBeFalsy();
    const dbs = (r.structuredContent as { databases: { name: string; summary: string }[] }).databases;
    expect(dbs.map((d) => d.name)).toEqual(['demo']);
    expect(dbs[0]!.summary).toContain('allow SELECT, SEE on demo');
    expect(dbs[0]!.summary).toContain('deny SEE on demo.public.users.email');
  });

  test('list_tables and describe_table: users.email and users.ssn masked for the analyst', async () => {
    const tables = await callTool(clients().analyst, 'list_tables', { database: 'demo', schema: 'public' });
    expect(tables.isError, tables.text).toBeFalsy();
    const names = (tables.structuredContent as { tables: { name: string; kind: string }[] }).tables;
    expect(names).toEqual(
      expect.arrayContaining([
        { schema: 'public', name: 'users', kind: 'table' },
        { schema: 'public', name: 'orders', kind: 'table' },
        { schema: 'public', name: 'orgs', kind: 'table' },
      ]),
    );
    const d = await callTool(clients().analyst, 'describe_table', { database: 'demo', table: 'users' });
    expect(d.isError, d.text).toBeFalsy();
    const desc = d.structuredContent as {
      columns: { name: string; type: string; nullable: boolean; masked: boolean; primary_key: boolean }[];
      primary_key: string[];
      foreign_keys: { columns: string[]; references: { table: string; columns: string[] } }[];
    };
    const col = (n: string) => desc.columns.find((c) => c.name === n)!;
    expect(col('email').masked).toBe(true);
    expect(col('ssn').masked).toBe(true);
    expect(col('name').masked).toBe(false);
    expect(col('id')).toMatchObject({ type: 'integer', nullable: false, primary_key: true, masked: false });
    expect(desc.primary_key).toEqual(['id']);
    expect(desc.foreign_keys).toEqual([
      expect.objectContaining({
        columns: ['org_id'],
        references: { schema: 'public', table: 'orgs', columns: ['id'] },
      }),
    ]);
  });

  test('execute_query: masked columns read *****, the text content is the rows as JSON, params bind', async () => {
    const r = await callTool(clients().analyst, 'execute_query', {
      database: 'demo',
      sql: 'SELECT id, name, email, ssn FROM users WHERE id <= $1 ORDER BY id',
      params: [2],
    });
    expect(r.isError, r.text).toBeFalsy();
    const rows = JSON.parse(r.text) as Record<string, unknown>[];
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({ id: 1, email: '*****', ssn: '*****' });
    expect(typeof rows[0]!.name).toBe('string');
    expect(rows[0]!.name).not.toBe('*****');
    expect(r.structuredContent).toMatchObject({ row_count: 2, truncated: false });
  });

  test('execute_query: a WHERE on a hidden column is refused with the proxy’s message', async () => {
    const r = await callTool(clients().analyst, 'execute_query', {
      database: 'demo',
      sql: "SELECT id FROM users WHERE email LIKE 'a%'",
    });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('column users.email is hidden from you and cannot be tested in WHERE');
    expect(r.text).toContain('SQLSTATE: 42501');
    expect(r.structuredContent).toBeUndefined();
  });

  test('execute_query: max_rows truncates and says so', async () => {
    const r = await callTool(clients().analyst, 'execute_query', {
      database: 'demo',
      sql: 'SELECT id FROM users ORDER BY id',
      max_rows: 3,
    });
    expect(r.isError, r.text).toBeFalsy();
    expect(JSON.parse(r.text)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    expect(r.structuredContent).toMatchObject({ row_count: 3, truncated: true });
  });

  // Attack finding (fixed): the rows of a call were kept whole before the cap was applied, so
  // 10 000 rows of 10 MB (max_rows 10 000) were 100 GB held by the MCP server, and an answer over
  // 10 MiB made the SDK's stdio client close the connection. Now a call keeps at most
  // MAX_RESULT_BYTES of rows (4 MiB) and reads the rest only to drop them.
  test('execute_query: rows past 4 MiB are left out and the result says truncated', async () => {
    const r = await callTool(clients().analyst, 'execute_query', {
      database: 'demo',
      sql: "SELECT g, repeat('x', 1000000) AS pad FROM generate_series(1, 40) g",
      max_rows: 10_000,
    });
    expect(r.isError, r.text).toBeFalsy();
    const sc = r.structuredContent as { row_count: number; truncated: boolean; rows: { g: number }[] };
    expect(sc.truncated).toBe(true);
    expect(sc.row_count).toBe(4);
    expect(sc.rows.map((x) => x.g)).toEqual([1, 2, 3, 4]);
    expect(r.text.length).toBeLessThan(4 << 20);
  });

  test('execute_query: a write is refused, even for a key allowed to write', async () => {
    const analyst = await callTool(clients().analyst, 'execute_query', {
      database: 'demo',
      sql: 'UPDATE orders SET note = note WHERE id = 1',
    });
    expect(analyst.isError).toBe(true);
    expect(analyst.text).toContain('42501');
    const support = await callTool(clients().support, 'execute_query', {
      database: 'demo',
      sql: 'UPDATE orders SET note = note WHERE id = 1',
    });
    expect(support.isError).toBe(true);
    expect(support.text).toContain('read-only transaction');
    expect(support.text).toContain('SQLSTATE: 25006');
  });

  test('execute_statement: refused for the read-only key, allowed for the writer', async () => {
    const sql = 'UPDATE orders SET note = note WHERE id = 1 RETURNING id';
    const refused = await callTool(clients().analyst, 'execute_statement', { database: 'demo', sql });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('permission denied for table orders');
    const allowed = await callTool(clients().support, 'execute_statement', { database: 'demo', sql });
    expect(allowed.isError, allowed.text).toBeFalsy();
    expect(allowed.structuredContent).toMatchObject({ command: 'UPDATE', affected: 1, rows: [{ id: 1 }] });
  });

  test('a database no role mentions is refused (mcp connection kind)', async () => {
    const r = await callTool(clients().analyst, 'execute_query', { database: 'other', sql: 'SELECT 1' });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('permission denied for database "other"');
    const t = await callTool(clients().analyst, 'list_tables', { database: 'other' });
    expect(t.isError).toBe(true);
  });

  test('explain_query: decided like its statement; ANALYZE only when asked', async () => {
    const plain = await callTool(clients().analyst, 'explain_query', {
      database: 'demo',
      sql: 'SELECT id FROM users WHERE id = $1',
      params: [1],
    });
    expect(plain.isError, plain.text).toBeFalsy();
    expect(plain.text).toMatch(/Scan/);
    expect(plain.text).not.toMatch(/actual time/);
    const analyzed = await callTool(clients().analyst, 'explain_query', {
      database: 'demo',
      sql: 'SELECT id FROM users',
      analyze: true,
    });
    expect(analyzed.text).toMatch(/actual time/);
    const refused = await callTool(clients().analyst, 'explain_query', {
      database: 'demo',
      sql: 'SELECT id FROM users ORDER BY ssn',
    });
    expect(refused.isError).toBe(true);
    expect(refused.text).toContain('users.ssn');
  });

  test('errors are redacted as on the wire: a data exception on a table with a hidden column', async () => {
    const r = await callTool(clients().analyst, 'execute_query', {
      database: 'demo',
      sql: 'SELECT name::int FROM users',
    });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('ERROR:  invalid_text_representation');
    expect(r.text).toContain('SQLSTATE: 22P02');
    expect(r.text).not.toMatch(/invalid input syntax/);
  });

  test('DISCARD ALL on every checkout: a SET from one call does not reach the next', async () => {
    const set = await callTool(clients().support, 'execute_statement', {
      database: 'demo',
      sql: 'SET search_path = pg_catalog',
    });
    expect(set.isError, set.text).toBeFalsy();
    for (let i = 0; i < 3; i++) {
      const r = await callTool(clients().support, 'execute_query', {
        database: 'demo',
        sql: 'SELECT count(*) AS n FROM users',
      });
      expect(r.isError, r.text).toBeFalsy();
      expect(JSON.parse(r.text)).toEqual([{ n: expect.any(String) }]);
    }
  });

  test('one statement per call: a second statement cannot leave the READ ONLY transaction', async () => {
    const r = await callTool(clients().support, 'execute_query', {
      database: 'demo',
      sql: 'SELECT 1; COMMIT; UPDATE orders SET note = note WHERE id = 1',
    });
    expect(r.isError).toBe(true);
    expect(r.text).toContain('42601');
  });
}

describe('pgwarden mcp over stdio', () => {
  let analyst: StdioSession;
  let support: StdioSession;
  beforeAll(async () => {
    [analyst, support] = await Promise.all([
      connectStdio(file, TOKENS.analyst),
      connectStdio(file, TOKENS.support),
    ]);
  });
  afterAll(async () => {
    await Promise.all([analyst?.close(), support?.close()]);
  });

  sharedScenarios(() => ({ analyst: analyst.client, support: support.client }));

  /** The proxy's own audit line (not the tool's) of a statement of the analyst key containing `fragment`. */
  const proxyLineOfAnalyst = (fragment: string) => (l: Record<string, unknown>) =>
    l.audit === true &&
    l.event !== 'mcp-tool' &&
    l.identity === KEY_IDS.analyst &&
    String(l.sql).includes(fragment);

  test('every tool call writes an audit line with the key id; statements get the proxy’s own lines', async () => {
    await callTool(analyst.client, 'execute_query', {
      database: 'demo',
      sql: "SELECT name FROM users WHERE name = 'x'",
    });
    const line = await analyst.logs.waitFor(
      (l) => l.event === 'mcp-tool' && l.tool === 'execute_query' && String(l.sql).includes('name = $1'),
    );
    expect(line).toMatchObject({
      audit: true,
      identity: KEY_IDS.analyst,
      roles: ['analyst'],
      transport: 'stdio',
    });
    expect(JSON.stringify(line)).not.toContain("'x'");
    await analyst.logs.waitFor(proxyLineOfAnalyst('users'));
  });

  test('execute_query stopped at max_rows (PortalSuspended): masked as ever, and the proxy audits the statement', async () => {
    const r = await callTool(analyst.client, 'execute_query', {
      database: 'demo',
      sql: 'SELECT id, ssn AS stopped_portal_probe FROM users ORDER BY id',
      max_rows: 2,
    });
    expect(r.isError, r.text).toBeFalsy();
    expect(JSON.parse(r.text)).toEqual([
      { id: 1, stopped_portal_probe: '*****' },
      { id: 2, stopped_portal_probe: '*****' },
    ]);
    expect(r.structuredContent).toMatchObject({ row_count: 2, truncated: true });
    await analyst.logs.waitFor(proxyLineOfAnalyst('stopped_portal_probe'));
  });

  test('a missing, revoked or expired key: the process exits 2 before serving', () => {
    for (const token of [undefined, TOKENS.revoked, TOKENS.expired, 'pgwt_not-a-key']) {
      const env = { ...testEnv() } as Record<string, string>;
      delete env.PGWARDEN_API_KEY;
      if (token !== undefined) env.PGWARDEN_API_KEY = token;
      const r = spawnSync(process.execPath, [BIN, 'mcp', '--config', file], { env, cwd: ROOT, input: '' });
      expect(r.status).toBe(2);
      expect(r.stderr.toString()).toContain('PGWARDEN_API_KEY');
    }
    // Four child processes one after another: on a loaded machine each start takes seconds.
  }, 240_000);
});

describe('pgwarden mcp over Streamable HTTP', () => {
  let server: HttpServerChild;
  let analyst: Client;
  let support: Client;
  beforeAll(async () => {
    server = await startHttpChild(file);
    [analyst, support] = await Promise.all([
      connectHttp(server.url, TOKENS.analyst),
      connectHttp(server.url, TOKENS.support),
    ]);
  });
  afterAll(async () => {
    await Promise.all([analyst?.close(), support?.close()]);
    await server?.stop();
  });

  sharedScenarios(() => ({ analyst, support }));

  const toolsCall = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'execute_query',
      arguments: { database: 'demo', sql: 'SELECT 4242 AS unauthorized_probe' },
    },
  });
  const post = (headers: Record<string, string>) =>
    fetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: toolsCall,
    });

  test('no key, a bad key, a revoked key, an expired key: 401 and no tool runs', async () => {
    const cases: Record<string, string>[] = [
      {},
      { authorization: 'Bearer pgwt_not-a-key' },
      { authorization: `Bearer ${TOKENS.revoked}` },
      { authorization: `Bearer ${TOKENS.expired}` },
      { authorization: `Basic ${Buffer.from(`${KEY_IDS.analyst}:${TOKENS.analyst}`).toString('base64')}` },
    ];
    for (const headers of cases) {
      const res = await post(headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    }
    await server.logs.waitFor((l) => l.event === 'mcp-auth-failed' && l.reason === 'missing');
    // A statement run after the refusals: once its line is logged, a probe's would be too (one log,
    // written in order), so the probe's absence is not just a line not yet flushed.
    const after = await callTool(analyst, 'execute_query', {
      database: 'demo',
      sql: 'SELECT 1 AS after_the_refusals',
    });
    expect(after.isError, after.text).toBeFalsy();
    await server.logs.waitFor((l) => String(l.sql ?? '').includes('after_the_refusals'));
    expect(server.logs.lines.filter((l) => String(l.sql ?? '').includes('unauthorized_probe'))).toEqual([]);
  });

  test('the SDK client is refused without a key', async () => {
    await expect(connectHttp(server.url, 'pgwt_not-a-key')).rejects.toThrow(/401|invalid API key/);
  });

  test('a key reading one table: list_tables shows it alone; describe_table of another is the proxy’s refusal', async () => {
    const narrow = await connectHttp(server.url, TOKENS.narrow);
    try {
      const tables = await callTool(narrow, 'list_tables', { database: 'demo' });
      expect(tables.isError, tables.text).toBeFalsy();
      expect((tables.structuredContent as { tables: unknown[] }).tables).toEqual([
        { schema: 'public', name: 'orders', kind: 'table' },
      ]);
      const users = await callTool(narrow, 'describe_table', { database: 'demo', table: 'users' });
      expect(users.isError).toBe(true);
      expect(users.text).toContain('permission denied for table users');
      const orders = await callTool(narrow, 'describe_table', { database: 'demo', table: 'orders' });
      expect(orders.isError, orders.text).toBeFalsy();
      const missing = await callTool(narrow, 'describe_table', { database: 'demo', table: 'nope' });
      expect(missing.isError).toBe(true);
      expect(missing.text).toContain('relation "nope" does not exist');
    } finally {
      await narrow.close();
    }
  });

  test('each tool call is audited with the key id over HTTP too', async () => {
    await callTool(support, 'list_databases');
    await server.logs.waitFor(
      (l) =>
        l.event === 'mcp-tool' &&
        l.tool === 'list_databases' &&
        l.identity === KEY_IDS.support &&
        l.transport === 'http',
    );
  });
});

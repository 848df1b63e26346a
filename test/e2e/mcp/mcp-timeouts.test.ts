// pgwarden mcp bounds what a tool call holds: statement_timeout on its statements, and a call whose HTTP request goes away cancels its statement upstream.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, expect, test } from 'vitest';
import { superuserUrl } from '../../helpers/policy-store-db.js';
import {
  callTool,
  connectHttp,
  type HttpServerChild,
  mcpConfigObject,
  startHttpChild,
  TOKENS,
  writeConfig,
} from './mcp-harness.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Starts `pgwarden mcp --http` on the MCP test config with `limits` merged in. */
async function serverWith(
  limits: Record<string, number>,
): Promise<{ server: HttpServerChild; demoUrl: string }> {
  const cfg = mcpConfigObject();
  cfg.limits = { ...((cfg.limits as Record<string, unknown> | undefined) ?? {}), ...limits };
  const file = writeConfig(cfg);
  cleanups.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  const server = await startHttpChild(file);
  cleanups.push(() => server.stop());
  // pg_stat_activity as a superuser sees every session's query.
  return { server, demoUrl: superuserUrl('postgres') };
}

/** A statement that runs for minutes unless canceled (the marker tells it apart in pg_stat_activity, when run as sent). */
const longQuery = (marker: number) => `SELECT count(*) AS n FROM generate_series(1, ${marker}) AS g`;

/** Whether a statement containing `generate_series(1, marker)` is running upstream now. */
const runningUpstream = async (url: string, marker: number) =>
  (await activeUpstream(url, `generate_series(1, ${marker})`)) > 0;

async function waitUntil(cond: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return cond();
}

/** POSTs one `tools/call` as a bare HTTP request (no SDK client), so that aborting `signal` closes its connection. */
function postToolCall(
  url: string,
  name: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
): Promise<Response | Error> {
  return fetch(url, {
    method: 'POST',
    signal,
    headers: {
      authorization: `Bearer ${TOKENS.analyst}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
  }).catch((e: Error) => e);
}

/** Active upstream statements whose text contains `fragment`. */
async function activeUpstream(url: string, fragment: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
      [`%${fragment}%`],
    );
    return (r.rows[0] as { n: number }).n;
  } finally {
    await c.end();
  }
}

test('limits.mcp_statement_timeout_ms: a statement past it fails the call with 57014, and the key goes on', async () => {
  const { server } = await serverWith({ mcp_statement_timeout_ms: 700 });
  const analyst = await connectHttp(server.url, TOKENS.analyst);
  const started = Date.now();
  const slow = await callTool(analyst, 'execute_query', {
    database: 'demo',
    sql: longQuery(100_000_000_001),
  });
  expect(slow.isError).toBe(true);
  expect(slow.text).toContain('canceling statement due to statement timeout');
  expect(slow.text).toContain('SQLSTATE: 57014');
  expect(Date.now() - started).toBeLessThan(15_000);
  const after = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(after.isError).toBeFalsy();
  expect(JSON.parse(after.text)).toEqual([{ one: 1 }]);
  await analyst.close();
});

test('an HTTP tool call whose client goes away cancels its statement upstream', async () => {
  const { server, demoUrl } = await serverWith({ mcp_statement_timeout_ms: 0 });
  const marker = 100_000_000_002;
  const abort = new AbortController();
  // EXPLAIN ANALYZE runs the statement as sent (execute_query would FETCH from a cursor of it,
  // and pg_stat_activity would show the FETCH, not the marker).
  const call = postToolCall(
    server.url,
    'explain_query',
    { database: 'demo', sql: longQuery(marker), analyze: true },
    abort.signal,
  );
  expect(await waitUntil(() => runningUpstream(demoUrl, marker), 20_000)).toBe(true);
  abort.abort();
  expect(await call).toBeInstanceOf(Error);
  // Gone upstream within a few seconds (before: it ran until it finished, minutes later).
  expect(await waitUntil(async () => !(await runningUpstream(demoUrl, marker)), 5_000)).toBe(true);
  // The key's pool still serves.
  const analyst = await connectHttp(server.url, TOKENS.analyst);
  const after = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 2 AS two' });
  expect(JSON.parse(after.text)).toEqual([{ two: 2 }]);
  await analyst.close();
});

test('limits.mcp_pool_wait_ms: a call finding every pooled connection of its key busy fails with 53300', async () => {
  const { server, demoUrl } = await serverWith({ mcp_statement_timeout_ms: 0, mcp_pool_wait_ms: 3_000 });
  // The pool holds 4 connections per (database, key): four long calls take them all.
  const abort = new AbortController();
  const busy = [1, 2, 3, 4].map((i) =>
    postToolCall(
      server.url,
      'explain_query',
      { database: 'demo', sql: longQuery(100_000_000_010 + i), analyze: true },
      abort.signal,
    ),
  );
  const fragment = 'generate_series(1, 10000000001';
  expect(await waitUntil(async () => (await activeUpstream(demoUrl, fragment)) === 4, 60_000)).toBe(true);
  const analyst = await connectHttp(server.url, TOKENS.analyst);
  const fifth = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 5 AS five' });
  expect(fifth.isError).toBe(true);
  expect(fifth.text).toContain('SQLSTATE: 53300');
  expect(fifth.text).toContain('stayed busy for 3000 ms');
  abort.abort();
  for (const r of await Promise.all(busy)) expect(r).toBeInstanceOf(Error);
  expect(await waitUntil(async () => (await activeUpstream(demoUrl, fragment)) === 0, 10_000)).toBe(true);
  const after = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 6 AS six' });
  expect(JSON.parse(after.text)).toEqual([{ six: 6 }]);
  await analyst.close();
});

test('a tool call leaves no transaction to the next caller of its pool: transaction control is refused', async () => {
  // Attack: execute_statement 'BEGIN' went back to the pool inside a transaction; the next call
  // taking that connection (any agent with the key) failed with 25001 at its DISCARD ALL.
  const { server } = await serverWith({});
  const support = await connectHttp(server.url, TOKENS.support);
  for (const sql of ['BEGIN', 'START TRANSACTION READ WRITE', 'SAVEPOINT s', 'COMMIT']) {
    const r = await callTool(support, 'execute_statement', { database: 'demo', sql });
    expect(r.isError, sql).toBe(true);
    expect(r.text, sql).toContain('SQLSTATE: 0A000');
    expect(r.text, sql).toContain('execute_statement runs each statement in a transaction of its own');
  }
  // The pool holds 4 connections: 8 calls go through every one of them.
  for (let i = 0; i < 8; i++) {
    const r = await callTool(support, 'execute_query', { database: 'demo', sql: `SELECT ${i} AS i` });
    expect(r.isError, r.text).toBeFalsy();
    expect(JSON.parse(r.text)).toEqual([{ i }]);
  }
  await support.close();
});

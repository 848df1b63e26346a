// The Streamable HTTP endpoint's own answers (no database): bad POSTs get the SDK transport's statuses, a batch one JSON body, a notification 202.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ApiKeyAuthenticator } from '../../../src/mcp/api-key-auth.js';
import { type HttpEndpoint, startHttpEndpoint } from '../../../src/mcp/http-endpoint.js';
import type { ProxyPools } from '../../../src/mcp/proxy-pools.js';
import { loadTestConfig } from '../../helpers/proxy.js';
import { mcpConfigObject, TOKENS } from './mcp-harness.js';

let endpoint: HttpEndpoint;
let url: string;

beforeAll(async () => {
  const config = loadTestConfig(mcpConfigObject()).config;
  const logger = pino({ level: 'silent' });
  endpoint = await startHttpEndpoint(
    '127.0.0.1',
    0,
    new ApiKeyAuthenticator(() => config),
    {
      config: () => config,
      // list_databases, the only tool called here, needs neither pools nor a catalog.
      pools: {} as ProxyPools,
      logger,
      version: '0.0.0-test',
      catalog: () => Promise.reject(new Error('no catalog in this test')),
    },
    logger,
  );
  url = `http://127.0.0.1:${endpoint.address.port}/mcp`;
});

afterAll(() => endpoint?.close());

const call = (id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'list_databases', arguments: {} },
});

const post = (body: string, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${TOKENS.analyst}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...headers,
    },
    body,
  });

describe('POST /mcp', () => {
  test('the SDK client initializes and calls a tool', async () => {
    const client = new Client({ name: 'pgwarden-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: `Bearer ${TOKENS.analyst}` } },
      }),
    );
    const r = await client.callTool({ name: 'list_databases', arguments: {} });
    expect(r.isError).toBeFalsy();
    expect((r.structuredContent as { databases: { name: string }[] }).databases.map((d) => d.name)).toEqual([
      'demo',
    ]);
    await client.close();
  });

  test('one request: one JSON-RPC response object; a batch of two: an array of both, in order', async () => {
    const one = await post(JSON.stringify(call(7)));
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toBe('application/json');
    expect(await one.json()).toMatchObject({ jsonrpc: '2.0', id: 7, result: { structuredContent: {} } });
    const two = await post(JSON.stringify([call(1), call(2)]));
    expect(two.status).toBe(200);
    const body = (await two.json()) as { id: number }[];
    expect(body.map((m) => m.id)).toEqual([1, 2]);
  });

  test('notifications only: 202 and no body', async () => {
    const r = await post(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    expect(r.status).toBe(202);
    expect(await r.text()).toBe('');
  });

  test('bad POSTs: 406, 415, 400 (JSON, JSON-RPC, batch, protocol version), 413', async () => {
    const expectError = async (r: Response, status: number, code: number, message: RegExp) => {
      expect(r.status).toBe(status);
      const body = (await r.json()) as { error: { code: number; message: string } };
      expect(body.error.code).toBe(code);
      expect(body.error.message).toMatch(message);
    };
    await expectError(
      await post(JSON.stringify(call(1)), { accept: 'application/json' }),
      406,
      -32000,
      /Not Acceptable/,
    );
    await expectError(
      await post(JSON.stringify(call(1)), { 'content-type': 'text/plain' }),
      415,
      -32000,
      /Unsupported Media Type/,
    );
    await expectError(await post('{"jsonrpc": '), 400, -32700, /Invalid JSON$/);
    await expectError(await post(JSON.stringify({ id: 1, method: 'tools/call' })), 400, -32700, /JSON-RPC/);
    await expectError(
      await post(JSON.stringify(Array.from({ length: 101 }, (_, i) => call(i)))),
      400,
      -32600,
      /Batch must not exceed 100/,
    );
    await expectError(
      await post(JSON.stringify(call(1)), { 'mcp-protocol-version': '1999-01-01' }),
      400,
      -32000,
      /Unsupported protocol version: 1999-01-01/,
    );
    await expectError(await post(`"${'x'.repeat(4 * 1024 * 1024)}"`), 413, -32000, /Payload Too Large/);
  });

  test('GET and DELETE are 405; no key is 401 before the body is read', async () => {
    expect((await fetch(url, { headers: { authorization: `Bearer ${TOKENS.analyst}` } })).status).toBe(405);
    expect(
      (await fetch(url, { method: 'DELETE', headers: { authorization: `Bearer ${TOKENS.analyst}` } })).status,
    ).toBe(405);
    expect((await post(JSON.stringify(call(1)), { authorization: '' })).status).toBe(401);
  });
});

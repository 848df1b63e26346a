// pgwarden mcp with a policy store: a key revoked in the store (as the console or `pgwarden keys` does) is refused from the next request on, without SIGHUP.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { keysRevoke } from '../../../src/policy/keys-command.js';
import { policyImport } from '../../../src/policy/policy-command.js';
import { createStoreDatabase, storeInstanceConfig, writeConfig } from '../../helpers/policy-store-db.js';
import { testEnv } from '../../helpers/proxy.js';
import {
  callTool,
  connectHttp,
  type HttpServerChild,
  KEY_IDS,
  mcpConfigObject,
  startHttpChild,
  TOKENS,
} from './mcp-harness.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-mcp-store-'));
let db: Awaited<ReturnType<typeof createStoreDatabase>>;
let server: HttpServerChild | undefined;
let instance: string;

beforeAll(async () => {
  Object.assign(process.env, testEnv());
  db = await createStoreDatabase();
  instance = writeConfig(dir, 'instance.yaml', storeInstanceConfig(db.url));
  const policyFile = writeConfig(dir, 'policy.yaml', mcpConfigObject());
  expect((await policyImport({ config: instance, file: policyFile })).stdout).toMatch(
    /^imported as version 1 /,
  );
});
afterAll(async () => {
  await server?.stop();
  await db.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a key revoked in the store: 401 for it at once (NOTIFY, no SIGHUP); the other key keeps working', async () => {
  server = await startHttpChild(instance);
  const analyst = await connectHttp(server.url, TOKENS.analyst);
  const before = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(before.isError).toBeFalsy();

  const revoked = await keysRevoke({ config: instance, id: KEY_IDS.analyst });
  expect(revoked.stdout).toContain('The policy store now holds version 2');
  await server.logs.waitFor((l) => l.event === 'reload');

  await expect(
    callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' }),
  ).rejects.toThrow(/401|invalid API key/);
  const support = await connectHttp(server.url, TOKENS.support);
  const after = await callTool(support, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(JSON.parse(after.text)).toEqual([{ one: 1 }]);
  await support.close();
});

// pgwarden mcp --http and SIGHUP: a key revoked in the config file is refused (401) from the next request on.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import YAML from 'yaml';
import {
  callTool,
  connectHttp,
  type HttpServerChild,
  KEY_IDS,
  mcpConfigObject,
  startHttpChild,
  TOKENS,
  writeConfig,
} from './mcp-harness.js';

let server: HttpServerChild | undefined;
let file: string | undefined;
afterAll(async () => {
  await server?.stop();
  if (file) fs.rmSync(path.dirname(file), { recursive: true, force: true });
});

test('SIGHUP with the key revoked: 401 for it, the other key keeps working', async () => {
  const cfg = mcpConfigObject();
  file = writeConfig(cfg);
  server = await startHttpChild(file);
  const analyst = await connectHttp(server.url, TOKENS.analyst);
  const before = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(before.isError).toBeFalsy();

  for (const k of cfg.api_keys as { id: string; revoked?: boolean }[])
    if (k.id === KEY_IDS.analyst) k.revoked = true;
  fs.writeFileSync(file, YAML.stringify(cfg));
  server.child.kill('SIGHUP');
  await server.logs.waitFor((l) => l.event === 'reload');

  await expect(
    callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' }),
  ).rejects.toThrow(/401|invalid API key/);
  const support = await connectHttp(server.url, TOKENS.support);
  const after = await callTool(support, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(after.isError).toBeFalsy();
  expect(JSON.parse(after.text)).toEqual([{ one: 1 }]);
  await support.close();
});

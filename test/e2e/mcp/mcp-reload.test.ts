// pgwarden mcp --http reloads: a key revoked in the config file (SIGHUP) or in the policy store (its NOTIFY, no SIGHUP) is refused (401) from the next request on.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, test } from 'vitest';
import YAML from 'yaml';
import { keysRevoke } from '../../../src/policy/keys-command.js';
import { policyImport } from '../../../src/policy/policy-command.js';
import {
  createStoreDatabase,
  storeInstanceConfig,
  writeConfig as writeConfigIn,
} from '../../helpers/policy-store-db.js';
import { testEnv } from '../../helpers/proxy.js';
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

const cleanups: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Starts `pgwarden mcp --http` on `file`, checks the analyst key works, revokes it with `revoke`, and checks the outcome. */
async function revokedAtOnce(
  file: string,
  revoke: (server: HttpServerChild) => Promise<void>,
): Promise<void> {
  const server = await startHttpChild(file);
  cleanups.push(() => server.stop());
  const analyst = await connectHttp(server.url, TOKENS.analyst);
  const before = await callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(before.isError).toBeFalsy();

  // Only a reload logged after the revocation counts (none is logged at start).
  const reloadsBefore = server.logs.lines.filter((l) => l.event === 'reload').length;
  expect(reloadsBefore).toBe(0);
  await revoke(server);
  await server.logs.waitFor((l) => l.event === 'reload');

  // A kept-alive socket the server closed meanwhile fails the fetch itself ("fetch failed", no
  // answer): that call is made once more; the answer must then be the 401. (A server that had died
  // fails the support key's call below as well.)
  const revoked = () => callTool(analyst, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  await expect(
    revoked().catch((e: Error) => (/fetch failed/.test(e.message) ? revoked() : Promise.reject(e))),
  ).rejects.toThrow(/401|invalid API key/);
  const support = await connectHttp(server.url, TOKENS.support);
  const after = await callTool(support, 'execute_query', { database: 'demo', sql: 'SELECT 1 AS one' });
  expect(after.isError).toBeFalsy();
  expect(JSON.parse(after.text)).toEqual([{ one: 1 }]);
  await support.close();
}

test('SIGHUP with the key revoked: 401 for it, the other key keeps working', async () => {
  const cfg = mcpConfigObject();
  const file = writeConfig(cfg);
  cleanups.push(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  await revokedAtOnce(file, async (server) => {
    for (const k of cfg.api_keys as { id: string; revoked?: boolean }[])
      if (k.id === KEY_IDS.analyst) k.revoked = true;
    fs.writeFileSync(file, YAML.stringify(cfg));
    server.child.kill('SIGHUP');
  });
});

test('with a policy store, a key revoked there (pgwarden keys, the console): 401 at once, without SIGHUP', async () => {
  Object.assign(process.env, testEnv());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-mcp-store-'));
  const db = await createStoreDatabase();
  cleanups.push(
    () => fs.rmSync(dir, { recursive: true, force: true }),
    () => db.drop(),
  );
  const instance = writeConfigIn(dir, 'instance.yaml', storeInstanceConfig(db.url));
  const policyFile = writeConfigIn(dir, 'policy.yaml', mcpConfigObject());
  expect((await policyImport({ config: instance, file: policyFile })).stdout).toMatch(
    /^imported as version 1 /,
  );
  await revokedAtOnce(instance, async () => {
    const revoked = await keysRevoke({ config: instance, id: KEY_IDS.analyst });
    expect(revoked.stdout).toContain('The policy store now holds version 2');
  });
});

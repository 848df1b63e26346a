// `pgwarden keys` with a policy store: create, rotate, revoke and list commit new store versions (never a keys file the instances ignore).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { keysCreate, keysList, keysRevoke, keysRotate } from '../../src/policy/keys-command.js';
import { PolicyStore } from '../../src/policy/policy-store.js';
import { createDemoStore, type StoreDatabase } from '../helpers/policy-store-db.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-keys-store-'));
let db: StoreDatabase;
let config: string;

beforeAll(async () => {
  ({ store: db, config } = await createDemoStore(dir));
});
afterAll(async () => {
  await db.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function current() {
  const store = await PolicyStore.open(db.url);
  try {
    return await store.current();
  } finally {
    await store.close();
  }
}

describe('pgwarden keys with policy_store', () => {
  test('create commits a version holding the key (author pgwarden keys); rotate and revoke commit one each; list reads the store', async () => {
    const made = await keysCreate({ config, roles: ['analyst'], json: true, iterations: 16 });
    expect(made).toMatchObject({ exitCode: 0, stderr: '' });
    const key = JSON.parse(made.stdout) as { id: string; token: string; roles: string[] };
    expect(key.roles).toEqual(['analyst']);
    let stored = await current();
    expect(stored.version).toBe(2);
    expect(stored.author).toBe('pgwarden keys');
    const inStore = stored.policy.api_keys.find((k) => k.id === key.id);
    expect(inStore?.roles).toEqual(['analyst']);
    expect(JSON.stringify(stored.policy)).not.toContain(key.token);
    // No keys file beside the config: the keys went into the store.
    expect(fs.readdirSync(dir)).toEqual([path.basename(config)]);

    const text = await keysCreate({ config, roles: ['support'], iterations: 16 });
    expect(text.stdout).toContain('The policy store now holds version 3; every instance applies it at once.');

    const rotated = await keysRotate({ config, id: key.id, json: true });
    expect(rotated.exitCode).toBe(0);
    stored = await current();
    expect(stored.version).toBe(4);
    expect(stored.policy.api_keys.find((k) => k.id === key.id)?.previous_scram).toBe(inStore?.scram);

    expect(await keysRevoke({ config, id: key.id })).toMatchObject({
      exitCode: 0,
      stdout: `Revoked API key ${key.id}. The policy store now holds version 5; every instance applies it at once. Its open sessions are closed.\n`,
    });
    expect((await current()).policy.api_keys.find((k) => k.id === key.id)?.revoked).toBe(true);

    const listed = JSON.parse((await keysList({ config, json: true })).stdout) as {
      id: string;
      status: string;
    }[];
    expect(listed.find((k) => k.id === key.id)?.status).toBe('revoked');
    expect((await keysList({ config })).stdout).toMatch(
      new RegExp(`${key.id}\\s+analyst\\s+revoked\\s+store`),
    );
  });

  test('a role the store does not hold, or a key it does not hold, is refused and commits nothing', async () => {
    const before = (await current()).version;
    expect(await keysCreate({ config, roles: ['no_such_role'] })).toEqual({
      exitCode: 2,
      stdout: '',
      stderr: 'pgwarden keys: no role "no_such_role" in the policy\n',
    });
    expect(await keysRevoke({ config, id: 'pgw_NOTAKEY0000000000' })).toMatchObject({ exitCode: 2 });
    expect((await current()).version).toBe(before);
  });
});

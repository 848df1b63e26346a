// The keys file beside the config: read, merged into api_keys at load, written atomically, problems named.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { createKey } from '../../../src/policy/api-keys.js';
import { ConfigError, loadConfig } from '../../../src/policy/config-load.js';
import { readKeysFile, writeKeysFile } from '../../../src/policy/keys-file.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-keys-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const configObj = {
  databases: { demo: { url: 'postgres://app@127.0.0.1:5432/demo' } },
  users: { alice: { scram: 'SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy' } },
  roles: { analyst: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' }] } },
  keys_file: 'keys.yaml',
};

function writeConfig(name: string, obj: Record<string, unknown> = configObj): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, YAML.stringify(obj));
  return file;
}

function problemsOf(file: string): readonly string[] {
  try {
    loadConfig(file, {});
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('keys file', () => {
  test('a missing keys file holds no keys (a warning)', () => {
    const file = writeConfig('a.yaml', { ...configObj, keys_file: 'none.yaml' });
    const loaded = loadConfig(file, {});
    expect(loaded.config.api_keys).toEqual([]);
    expect(loaded.warnings).toEqual([
      `keys file ${path.join(dir, 'none.yaml')} does not exist yet: no API keys from it`,
    ]);
  });

  test('keys written beside the config are merged into api_keys at load, relative to the config', () => {
    const { keys, key } = createKey([], {
      roles: ['analyst'],
      expiresAt: null,
      now: Date.now(),
      iterations: 16,
    });
    writeKeysFile(path.join(dir, 'keys.yaml'), keys);
    expect((fs.statSync(path.join(dir, 'keys.yaml')).mode & 0o777).toString(8)).toBe('600');
    expect(readKeysFile(path.join(dir, 'keys.yaml'))).toEqual({ ok: true, keys, exists: true });
    const loaded = loadConfig(writeConfig('b.yaml'), {});
    expect(loaded.config.api_keys.map((k) => k.id)).toEqual([key.id]);
  });

  test('a key naming a role the config lacks, or a bad field, is a problem naming the keys file', () => {
    const { keys } = createKey([], { roles: ['ghost'], expiresAt: null, now: Date.now(), iterations: 16 });
    const kf = path.join(dir, 'bad-keys.yaml');
    writeKeysFile(kf, keys);
    const file = writeConfig('c.yaml', { ...configObj, keys_file: 'bad-keys.yaml' });
    expect(problemsOf(file)).toEqual([`${kf}: api_keys[0].roles[0]: names no role "ghost"`]);
    fs.writeFileSync(kf, YAML.stringify({ api_keys: [{ ...keys[0], roles: ['analyst'], id: 'no pe' }] }));
    expect(problemsOf(file)).toEqual([`${kf}: api_keys[0].id: must be 3-63 letters, digits, "_" or "-"`]);
  });

  test('a key id used twice is a problem', () => {
    const { keys } = createKey([], { roles: ['analyst'], expiresAt: null, now: Date.now(), iterations: 16 });
    writeKeysFile(path.join(dir, 'dup.yaml'), keys);
    const file = writeConfig('d.yaml', { ...configObj, keys_file: 'dup.yaml', api_keys: keys });
    expect(problemsOf(file)).toEqual([
      `api_keys: key id ${keys[0]!.id} appears twice (config and ${path.join(dir, 'dup.yaml')})`,
    ]);
  });
});

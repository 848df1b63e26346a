// A fresh database of the test PostgreSQL for a policy store, and the instance config that points at it.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import YAML from 'yaml';
import { DEMO_DIR } from '../../src/embedded/demo.js';
import { POLICY_FIELDS } from '../../src/policy/policy-schema.js';
import { demoConfigObject } from './proxy.js';

/** The demo config file, the policy every store test imports. */
export const DEMO_CONFIG_FILE = path.join(DEMO_DIR, 'pgwarden.yaml');

/** A superuser URL of database `db` on the test PostgreSQL. */
export function superuserUrl(db: string): string {
  const { host, port, superuser, superuserPassword } = inject('pg');
  return `postgres://${encodeURIComponent(superuser)}:${encodeURIComponent(superuserPassword)}@${host}:${port}/${db}`;
}

/** Creates an empty database `pgwarden_store_<random>` and returns its superuser URL. */
export async function createStoreDatabase(): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `pgwarden_store_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: superuserUrl('postgres') });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    name,
    url: superuserUrl(name),
    async drop() {
      const c = new pg.Client({ connectionString: superuserUrl('postgres') });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** The demo config without its policy fields (they live in the store), naming `policy_store: url`. */
export function storeInstanceConfig(
  url: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  const cfg = demoConfigObject();
  for (const f of POLICY_FIELDS) delete cfg[f];
  delete cfg.keys_file;
  return { ...cfg, policy_store: url, ...extra };
}

/** Writes a config object as YAML into `dir` and returns the file. */
export function writeConfig(dir: string, name: string, cfg: Record<string, unknown>): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, YAML.stringify(cfg));
  return file;
}

// A fresh database of the test PostgreSQL for a policy store (empty, or holding the demo policy), the instance config that points at it, a scratch database.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import YAML from 'yaml';
import { DEMO_DIR } from '../../src/embedded/demo.js';
import { policyImport } from '../../src/policy/policy-command.js';
import { POLICY_FIELDS } from '../../src/policy/policy-schema.js';
import { demoConfigObject, testEnv } from './proxy.js';

/** The demo config file, the policy every store test imports. */
export const DEMO_CONFIG_FILE = path.join(DEMO_DIR, 'pgwarden.yaml');

/** A superuser URL of database `db` on the test PostgreSQL. */
export function superuserUrl(db: string): string {
  const { host, port, superuser, superuserPassword } = inject('pg');
  return `postgres://${encodeURIComponent(superuser)}:${encodeURIComponent(superuserPassword)}@${host}:${port}/${db}`;
}

/** A store database of the test PostgreSQL: its name, superuser URL, and how to drop it. */
export interface StoreDatabase {
  readonly name: string;
  readonly url: string;
  drop(): Promise<void>;
}

/** Creates an empty database `pgwarden_store_<random>` and returns its superuser URL. */
export async function createStoreDatabase(): Promise<StoreDatabase> {
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

/**
 * A new store database holding the demo policy as version 1: the test environment (testEnv) put
 * into process.env first — the demo config's ${PGWARDEN_UPSTREAM_PORT}, read in-process by the
 * import, names the test PostgreSQL —, then `pgwarden policy import` of the demo config through an
 * instance config written to `<dir>/import.yaml`. Resolves with the store and that config file;
 * throws with the import's output when it fails.
 */
export async function createDemoStore(dir: string): Promise<{ store: StoreDatabase; config: string }> {
  Object.assign(process.env, testEnv());
  const store = await createStoreDatabase();
  const config = writeConfig(dir, 'import.yaml', storeInstanceConfig(store.url));
  const imported = await policyImport({ config, file: DEMO_CONFIG_FILE });
  if (imported.exitCode !== 0 || !/^imported as version 1 /.test(imported.stdout))
    throw new Error(`policy import failed: ${JSON.stringify(imported)}`);
  return { store, config };
}

/**
 * Creates database `name` of the test PostgreSQL owned by pgwarden_app (the demo's upstream login),
 * as the superuser; resolves with how to drop it (WITH (FORCE), so open sessions do not keep it).
 */
export async function createAppDatabase(name: string): Promise<{ drop(): Promise<void> }> {
  const su = new pg.Client({ connectionString: superuserUrl('postgres') });
  await su.connect();
  await su.query(`CREATE DATABASE ${name} OWNER pgwarden_app`);
  await su.end();
  return {
    async drop() {
      const c = new pg.Client({ connectionString: superuserUrl('postgres') });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

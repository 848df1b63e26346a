// The demo's policy store: an instance config naming a `pgwarden` schema of the demo database, seeded from examples/demo/pgwarden.yaml on first start.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { policyImport } from '../policy/policy-command.js';
import { POLICY_FIELDS } from '../policy/policy-schema.js';
import { PolicyStore } from '../policy/policy-store.js';
import { DEMO_APP_ROLE, DEMO_DIR } from './demo.js';

/** The demo's YAML: its policy seeds the store, its instance fields make the instance config. */
export const DEMO_SEED_FILE = path.join(DEMO_DIR, 'pgwarden.yaml');

/**
 * The policy store URL of the demo: the demo database itself, as {@link DEMO_APP_ROLE} (its owner,
 * which may create the `pgwarden` schema), on the port `npm start` records.
 */
export const DEMO_STORE_URL = `postgres://${DEMO_APP_ROLE}:\${PGWARDEN_UPSTREAM_PASSWORD:-pgwarden-app-demo}@127.0.0.1:\${PGWARDEN_UPSTREAM_PORT}/demo`;

/** The demo's audit file, beside its instance config: the web console's audit page and Dry run read it. */
export const DEMO_AUDIT_FILE = 'demo-audit.jsonl';

/**
 * Writes `file` (mode 0644): the instance fields of {@link DEMO_SEED_FILE} (listen, mode, demo,
 * databases), `env_file` at `envFile` (absolute), `policy_store` at {@link DEMO_STORE_URL}, and
 * `audit.file` {@link DEMO_AUDIT_FILE} (rotated past 10 MiB, two kept); no policy field and no
 * `keys_file` (config-schema.ts refuses both beside a store). Output: `file`.
 */
export function writeDemoStoreConfig(file: string, envFile: string): string {
  const raw = YAML.parse(fs.readFileSync(DEMO_SEED_FILE, 'utf8')) as Record<string, unknown>;
  const instance = Object.fromEntries(
    Object.entries(raw).filter(
      ([k]) => !(POLICY_FIELDS as readonly string[]).includes(k) && k !== 'keys_file',
    ),
  );
  const body = {
    ...instance,
    env_file: envFile,
    policy_store: DEMO_STORE_URL,
    audit: { file: DEMO_AUDIT_FILE, max_size_bytes: 10 * 1024 * 1024, keep: 2 },
  };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(
    file,
    `# Written by \`pgwarden demo\` (npm start): the demo instance, its policy in the policy store of the
# demo database (schema pgwarden), seeded from ${DEMO_SEED_FILE} on first start. The web console
# edits it; \`pgwarden check\` and \`mcp\` with this file read it.
${YAML.stringify(body)}`,
    { mode: 0o644 },
  );
  return file;
}

/**
 * Seeds the store that `configFile` names from {@link DEMO_SEED_FILE} when it holds no version yet
 * (`pgwarden policy import`: plain demo passwords stored as SCRAM verifiers). Output: true when it
 * seeded. Throws PolicyStoreUnavailableError when the store cannot be reached, Error when the import fails.
 */
export async function seedDemoStore(configFile: string, url: string): Promise<boolean> {
  const store = await PolicyStore.open(url);
  let version: number;
  try {
    version = (await store.current()).version;
  } finally {
    await store.close();
  }
  if (version !== 0) return false;
  const r = await policyImport({
    config: configFile,
    file: DEMO_SEED_FILE,
    summary: 'demo: seeded from examples/demo/pgwarden.yaml',
  });
  if (r.exitCode !== 0) throw new Error(r.stderr.trim());
  return true;
}

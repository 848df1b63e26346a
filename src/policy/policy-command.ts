// `pgwarden policy export|import|history`: the store's policy as a YAML file, and a YAML file into the store.
import fs from 'node:fs';
import os from 'node:os';
import YAML from 'yaml';
import { createScramVerifier } from '../auth/scram-verifier.js';
import { ConfigError, loadConfig } from './config-load.js';
import { PolicyInvalidError, policyToYaml, validatePolicy } from './policy-document.js';
import { POLICY_FIELDS } from './policy-schema.js';
import { PolicyStore, PolicyStoreUnavailableError } from './policy-store.js';

/** What the CLI prints and the code it exits with: 0 done, 1 store unreachable, 2 usage, config or policy error. */
export interface PolicyOutcome {
  readonly exitCode: 0 | 1 | 2;
  readonly stdout: string;
  readonly stderr: string;
}

const fail = (exitCode: 1 | 2, message: string): PolicyOutcome => ({
  exitCode,
  stdout: '',
  stderr: `pgwarden policy: ${message}\n`,
});

/**
 * Opens the store the config names; an outcome to print when there is none or it cannot be reached.
 * Only the store is read, so the variables of the databases' URLs need not be set.
 */
async function openStore(configFile: string): Promise<PolicyStore | PolicyOutcome> {
  let url: string | undefined;
  try {
    url = loadConfig(configFile, process.env, { needsUpstream: false }).config.policy_store;
  } catch (e) {
    if (e instanceof ConfigError) return { exitCode: 2, stdout: '', stderr: `${e.message}\n` };
    throw e;
  }
  if (url === undefined) return fail(2, `${configFile} names no policy_store`);
  try {
    return await PolicyStore.open(url);
  } catch (e) {
    if (e instanceof PolicyStoreUnavailableError) return fail(1, e.message);
    throw e;
  }
}

/**
 * `pgwarden policy export --config F [--output FILE]`: the store's current policy as canonical YAML
 * (policy-document.ts `policyToYaml`), on stdout or into FILE (mode 0600: it holds SCRAM verifiers).
 * A comment line names the version and epoch. Exit 0, 1 when the store cannot be reached, 2 for a config error.
 */
export async function policyExport(opts: { config: string; output?: string }): Promise<PolicyOutcome> {
  const store = await openStore(opts.config);
  if (!(store instanceof PolicyStore)) return store;
  try {
    const cur = await store.current();
    const text = policyToYaml(cur.policy);
    if (opts.output !== undefined) {
      fs.writeFileSync(opts.output, text, { mode: 0o600 });
      return {
        exitCode: 0,
        stdout: '',
        stderr: `wrote version ${cur.version} (epoch ${cur.epoch}) to ${opts.output}\n`,
      };
    }
    return { exitCode: 0, stdout: text, stderr: `version ${cur.version}, epoch ${cur.epoch}\n` };
  } finally {
    await store.close();
  }
}

/**
 * `pgwarden policy import --config F FILE`: replaces the store's policy by FILE's (a policy file, or a
 * whole pgwarden.yaml whose instance fields — listen, databases and their credentials, … — are left
 * out and named on stderr). Plain demo passwords become SCRAM verifiers (the store keeps verifiers
 * only). Validated strictly: every problem with its path, exit 2, and the store unchanged. Commits one
 * version authored `cli:<os user>` (nothing when the policy is already the store's).
 */
export async function policyImport(opts: {
  config: string;
  file: string;
  summary?: string;
}): Promise<PolicyOutcome> {
  let raw: unknown;
  try {
    const doc = YAML.parseDocument(fs.readFileSync(opts.file, 'utf8'), { prettyErrors: true });
    if (doc.errors.length > 0) return fail(2, `${opts.file}: ${doc.errors[0]?.message.split('\n')[0]}`);
    raw = doc.toJS() ?? {};
  } catch (e) {
    return fail(2, `cannot read ${opts.file}: ${(e as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    return fail(2, `${opts.file}: not a mapping`);
  const notes: string[] = [];
  const all = raw as Record<string, unknown>;
  const left = Object.keys(all).filter((k) => !(POLICY_FIELDS as readonly string[]).includes(k));
  if (left.length > 0) notes.push(`left out (they stay in each instance's own config): ${left.join(', ')}`);
  const policyRaw = Object.fromEntries(Object.entries(all).filter(([k]) => !left.includes(k)));
  const users = policyRaw.users as Record<string, Record<string, unknown>> | undefined;
  for (const [name, u] of Object.entries(users ?? {})) {
    if (u && typeof u === 'object' && typeof u.password === 'string' && u.scram === undefined) {
      const { password, ...rest } = u;
      users![name] = { ...rest, scram: createScramVerifier(password as string) };
      notes.push(`users.${name}: plain password stored as a SCRAM verifier`);
    }
  }
  let policy: ReturnType<typeof validatePolicy>;
  try {
    policy = validatePolicy(policyRaw);
  } catch (e) {
    if (e instanceof PolicyInvalidError)
      return fail(
        2,
        `${opts.file}: invalid policy, the store is unchanged\n  ${e.issues.map((i) => `${i.path}: ${i.message}`).join('\n  ')}`,
      );
    throw e;
  }
  const store = await openStore(opts.config);
  if (!(store instanceof PolicyStore)) return store;
  try {
    const r = await store.commit(
      { author: `cli:${os.userInfo().username}`, summary: opts.summary ?? `import ${opts.file}` },
      () => policy,
    );
    const what = r.committed
      ? `imported as version ${r.after.version} (epoch ${r.after.epoch}; ${r.changes.length} change${r.changes.length === 1 ? '' : 's'})`
      : `unchanged: the store already holds this policy (version ${r.after.version}, epoch ${r.after.epoch})`;
    return { exitCode: 0, stdout: `${what}\n`, stderr: notes.map((n) => `note: ${n}\n`).join('') };
  } catch (e) {
    if (e instanceof PolicyInvalidError)
      return fail(
        2,
        `invalid policy, the store is unchanged\n  ${e.issues.map((i) => `${i.path}: ${i.message}`).join('\n  ')}`,
      );
    throw e;
  } finally {
    await store.close();
  }
}

/** `pgwarden policy history --config F [--limit N]`: version, time, author, epoch and changes, newest first. */
export async function policyHistory(opts: { config: string; limit?: number }): Promise<PolicyOutcome> {
  const store = await openStore(opts.config);
  if (!(store instanceof PolicyStore)) return store;
  try {
    const rows = await store.history({ limit: opts.limit ?? 20 });
    const lines = rows.map(
      (r) =>
        `${r.version}\t${r.createdAt}\t${r.author}\t${r.epoch}\t${r.summary}\t${r.changes.map((c) => `${c.op} ${c.path}`).join(', ')}`,
    );
    return { exitCode: 0, stdout: lines.map((l) => `${l}\n`).join(''), stderr: '' };
  } finally {
    await store.close();
  }
}

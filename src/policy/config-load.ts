// Loads pgwarden.yaml: YAML parse, `${ENV}` substitution (the environment, then its env_file), zod validation, errors with their paths.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { formatIssue, formatPath } from './config-issues.js';
import { type Config, configSchema } from './config-schema.js';
import { environmentWith } from './env-file.js';
import { keysFilePath, readKeysFile } from './keys-file.js';
import { POLICY_FIELDS } from './policy-schema.js';
import { ADMIN_ROLE } from './resolve-roles.js';

/** A config that cannot be used: every problem, each as `path: message`. The CLI exits with code 2. */
export class ConfigError extends Error {
  readonly problems: readonly string[];
  constructor(file: string, problems: readonly string[]) {
    super(`${file}: invalid configuration\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** A loaded config: the value, where it came from, and non-fatal warnings to log. */
export interface LoadedConfig {
  readonly config: Config;
  /** Absolute path of the file, so relative paths in it (TLS, keys file) resolve beside it. */
  readonly file: string;
  readonly warnings: readonly string[];
}

export { formatPath } from './config-issues.js';

/** `${NAME}` or `${NAME:-default}` (the default used when NAME is unset or empty, as in sh). */
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${NAME}` in every string value (never in keys, never before YAML parsing, so a
 * secret cannot inject structure) with the environment variable; a missing one is a problem
 * (`unset(name)` says why it is missing).
 */
function substituteEnv(
  value: unknown,
  at: (string | number)[],
  env: NodeJS.ProcessEnv,
  problems: { at: (string | number)[]; message: string }[],
  unset: (name: string) => string,
): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name] === '' || env[name] === undefined ? fallback : env[name];
      if (v === undefined) {
        problems.push({ at, message: `${formatPath(at)}: ${unset(name)}` });
        return '';
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, [...at, i], env, problems, unset));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [
        k,
        substituteEnv(v, [...at, k], env, problems, unset),
      ]),
    );
  }
  return value;
}

/**
 * Where an unresolved upstream URL points when the command never connects ({@link ParseOptions}):
 * `.invalid` never resolves (RFC 2606), so nothing can be reached through it.
 */
export const UNRESOLVED_UPSTREAM_URL = 'postgres://unresolved.invalid/';

/** How a command uses the config. */
export interface ParseOptions {
  /**
   * False for a command that never connects upstream (`keys`): a `${NAME}` that cannot be
   * resolved in `databases.*` is then no problem, and that database's url becomes
   * {@link UNRESOLVED_UPSTREAM_URL}. Default true.
   */
  readonly needsUpstream?: boolean;
}

/** Warnings that do not stop the load (issue 4: a role with SELECT somewhere but SEE nowhere). */
function warningsFor(config: Config): string[] {
  const out: string[] = [];
  for (const [name, role] of Object.entries(config.roles)) {
    const allows = role.permissions.filter((p) => p.effect === 'allow');
    const select = allows.some((p) => p.actions.includes('SELECT'));
    const see = allows.some((p) => p.actions.includes('SEE'));
    if (select && !see)
      out.push(`role ${name} has SELECT but SEE nowhere: every value it reads will be masked`);
    for (const t of role.tenants) {
      const [kind, who] = [t.slice(0, 2), t.slice(2)];
      if (kind === 'u/' && !Object.hasOwn(config.users, who))
        out.push(`role ${name}: tenant ${t} names no user`);
      if (kind === 'g/' && !Object.hasOwn(config.groups, who))
        out.push(`role ${name}: tenant ${t} names no group`);
    }
  }
  const admin = Object.hasOwn(config.roles, ADMIN_ROLE) ? config.roles[ADMIN_ROLE] : undefined;
  if (admin && admin.tenants.length > 0 && config.default_role !== ADMIN_ROLE)
    out.push(
      `role ${ADMIN_ROLE} is never added from its tenants: a role named "${ADMIN_ROLE}" is held only by a connection that names it (-c pgwarden.role=${ADMIN_ROLE}), or, when it is default_role, by its tenants and the workspace admins (and then alone)`,
    );
  return out;
}

/**
 * Merges the keys file (`keys_file`, beside the config) into `api_keys`. Problems: the file's own
 * (syntax, schema), a key naming a role the config lacks, a key id used twice or equal to a user name.
 * A missing file holds no keys (a warning; `pgwarden keys create` makes it).
 */
function mergeKeysFile(config: Config, configFile: string, warnings: string[]): Config {
  if (config.keys_file === undefined) return config;
  const file = keysFilePath(configFile, config.keys_file);
  const read = readKeysFile(file);
  if (!read.ok) throw new ConfigError(configFile, read.problems);
  if (!read.exists) warnings.push(`keys file ${file} does not exist yet: no API keys from it`);
  const problems: string[] = [];
  read.keys.forEach((k, i) => {
    k.roles.forEach((r, j) => {
      if (!Object.hasOwn(config.roles, r))
        problems.push(`${file}: api_keys[${i}].roles[${j}]: names no role "${r}"`);
    });
  });
  const merged = [...config.api_keys, ...read.keys];
  const seen = new Set<string>();
  for (const k of merged) {
    if (seen.has(k.id)) problems.push(`api_keys: key id ${k.id} appears twice (config and ${file})`);
    seen.add(k.id);
    if (Object.hasOwn(config.users, k.id)) problems.push(`api_keys: key id ${k.id} is also a user name`);
  }
  if (problems.length > 0) throw new ConfigError(configFile, problems);
  return { ...config, api_keys: merged };
}

/**
 * With `policy_store` set, the policy lives in the store (issue 19) and the file may hold none of
 * its fields: one problem per such field, naming `pgwarden policy import` as the way to load it.
 */
function storedPolicyProblems(raw: unknown): string[] {
  if (raw === null || typeof raw !== 'object' || !('policy_store' in raw)) return [];
  return POLICY_FIELDS.filter((f) => Object.hasOwn(raw, f)).map(
    (f) =>
      `${f}: the policy lives in policy_store; load it with \`pgwarden policy import\`, not in this file`,
  );
}

/**
 * Parses and validates config text. `file` is used for messages and to resolve relative paths.
 * `${NAME}` reads `env`, then the `env_file` the config names (relative to it). When `keys_file`
 * is set, the keys file beside the config is read and its keys appended to `api_keys`. Throws
 * {@link ConfigError} listing every problem (YAML syntax, env file, missing env vars, schema,
 * keys file).
 */
export function parseConfig(
  text: string,
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: ParseOptions = {},
): LoadedConfig {
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0)
    throw new ConfigError(
      file,
      doc.errors.map((e) => e.message.split('\n')[0] ?? e.message),
    );
  const js: unknown = doc.toJS();
  const scope = environmentWith(js, file, env);
  if (scope.problems.length > 0) throw new ConfigError(file, scope.problems);
  const found: { at: (string | number)[]; message: string }[] = [];
  let raw = substituteEnv(js, [], scope.env, found, scope.unset);
  const upstreamOnly = (p: { at: (string | number)[] }) => p.at[0] === 'databases' && p.at.length >= 2;
  if (opts.needsUpstream === false && found.some(upstreamOnly)) {
    const dbs = (raw as { databases: Record<string, { url?: unknown }> }).databases;
    for (const p of found.filter(upstreamOnly)) {
      const entry = dbs[String(p.at[1])];
      if (entry && typeof entry === 'object') entry.url = UNRESOLVED_UPSTREAM_URL;
    }
    raw = { ...(raw as object), databases: dbs };
  }
  const problems = found
    .filter((p) => opts.needsUpstream !== false || !upstreamOnly(p))
    .map((p) => p.message);
  if (problems.length > 0) throw new ConfigError(file, problems);
  const stored = storedPolicyProblems(raw);
  if (stored.length > 0) throw new ConfigError(file, stored);
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) throw new ConfigError(file, parsed.error.issues.map(formatIssue));
  const abs = path.resolve(file);
  const warnings = warningsFor(parsed.data);
  const config = mergeKeysFile(parsed.data, abs, warnings);
  return { config, file: abs, warnings };
}

/** Reads and validates a config file ({@link parseConfig}). Throws {@link ConfigError} (also for an unreadable file). */
export function loadConfig(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: ParseOptions = {},
): LoadedConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, [`cannot read: ${(e as Error).message}`]);
  }
  return parseConfig(text, file, env, opts);
}

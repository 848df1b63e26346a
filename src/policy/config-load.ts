// Loads pgwarden.yaml: YAML parse, `${ENV}` substitution, zod validation, errors with their paths.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import type { ZodIssue } from 'zod';
import { type Config, configSchema } from './config-schema.js';

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

/** Renders a zod issue path as `roles.analyst.permissions[2].effect`. */
export function formatPath(p: readonly (string | number)[]): string {
  let out = '';
  for (const part of p) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out === '' ? '(top level)' : out;
}

function formatIssue(issue: ZodIssue): string {
  if (issue.code === 'invalid_enum_value') {
    return `${formatPath(issue.path)}: expected ${issue.options.map((o) => JSON.stringify(o)).join(' | ')}`;
  }
  if (issue.code === 'unrecognized_keys') {
    return `${formatPath(issue.path)}: unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
  }
  return `${formatPath(issue.path)}: ${issue.message}`;
}

/** `${NAME}` or `${NAME:-default}` (the default used when NAME is unset or empty, as in sh). */
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

/**
 * Replaces `${NAME}` in every string value (never in keys, never before YAML parsing, so a
 * secret cannot inject structure) with the environment variable; a missing one is a problem.
 */
function substituteEnv(
  value: unknown,
  at: (string | number)[],
  env: NodeJS.ProcessEnv,
  problems: string[],
): unknown {
  if (typeof value === 'string') {
    return value.replace(ENV_REF, (_m, name: string, fallback: string | undefined) => {
      const v = env[name] === '' || env[name] === undefined ? fallback : env[name];
      if (v === undefined) {
        problems.push(`${formatPath(at)}: environment variable ${name} is not set`);
        return '';
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => substituteEnv(v, [...at, i], env, problems));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [
        k,
        substituteEnv(v, [...at, k], env, problems),
      ]),
    );
  }
  return value;
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
  }
  return out;
}

/**
 * Parses and validates config text. `file` is used for messages and to resolve relative paths.
 * Throws {@link ConfigError} listing every problem (YAML syntax, missing env vars, schema).
 */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0)
    throw new ConfigError(
      file,
      doc.errors.map((e) => e.message.split('\n')[0] ?? e.message),
    );
  const problems: string[] = [];
  const raw = substituteEnv(doc.toJS(), [], env, problems);
  if (problems.length > 0) throw new ConfigError(file, problems);
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) throw new ConfigError(file, parsed.error.issues.map(formatIssue));
  return { config: parsed.data, file: path.resolve(file), warnings: warningsFor(parsed.data) };
}

/** Reads and validates a config file. Throws {@link ConfigError} (also for an unreadable file). */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, [`cannot read: ${(e as Error).message}`]);
  }
  return parseConfig(text, file, env);
}

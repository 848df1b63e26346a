// The policy as a document: taken from a config, validated alone, made canonical, hashed into its epoch, written as YAML.
import crypto from 'node:crypto';
import YAML from 'yaml';
import { formatPath } from './config-issues.js';
import type { Config } from './config-schema.js';
import { POLICY_FIELDS, type Policy, policySchema } from './policy-schema.js';

/** One problem of a policy: where (`roles.analyst.permissions[2].effect`, and as parts) and what. */
export interface PolicyIssue {
  readonly path: string;
  readonly parts: readonly (string | number)[];
  readonly message: string;
}

/** A policy that did not validate: every issue (the admin API answers 422 with them, issue 19). */
export class PolicyInvalidError extends Error {
  readonly issues: readonly PolicyIssue[];
  constructor(issues: readonly PolicyIssue[]) {
    super(`invalid policy\n  ${issues.map((i) => `${i.path}: ${i.message}`).join('\n  ')}`);
    this.name = 'PolicyInvalidError';
    this.issues = issues;
  }
}

/**
 * Validates `raw` as a policy (config-schema.ts `policySchema`: zod shape, MANAGE only on a database,
 * and every reference — default role, key roles, group members, tenants, workspace admins — resolving).
 * Output: the policy with defaults filled in. Throws {@link PolicyInvalidError} listing every issue.
 */
export function validatePolicy(raw: unknown): Policy {
  const parsed = policySchema.safeParse(raw ?? {});
  if (parsed.success) return parsed.data;
  throw new PolicyInvalidError(
    parsed.error.issues.map((i) => ({
      path: formatPath(i.path),
      parts: i.path,
      message:
        i.code === 'unrecognized_keys'
          ? `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.join(', ')}`
          : i.code === 'invalid_enum_value'
            ? `expected ${i.options.map((o) => JSON.stringify(o)).join(' | ')}`
            : i.message,
    })),
  );
}

/** The policy part of a validated config (issue 19): its POLICY_FIELDS, nothing else. */
export function policyOfConfig(config: Config): Policy {
  return Object.fromEntries(POLICY_FIELDS.map((f) => [f, config[f]])) as Policy;
}

/** `config` with its policy fields replaced by `policy` (the instance's own fields kept). */
export function withPolicy(config: Config, policy: Policy): Config {
  return { ...config, ...policy };
}

/**
 * A policy as its canonical plain value: fields in POLICY_FIELDS order, object keys of every
 * record in the policy's own order (role order is the order roles are resolved in), fields at their
 * default value left out (`disabled: false`, `revoked: false`, `expires_at: null`, empty lists and
 * settings), undefined fields dropped. Two policies that mean the same thing give the same value.
 */
export function canonicalPolicy(policy: Policy): Record<string, unknown> {
  return strip(Object.fromEntries(POLICY_FIELDS.map((f) => [f, policy[f]]))) as Record<string, unknown>;
}

const DEFAULTS: Record<string, unknown> = { disabled: false, revoked: false, expires_at: null };

function strip(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(strip);
  if (v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (x === undefined) continue;
    if (Object.hasOwn(DEFAULTS, k) && DEFAULTS[k] === x) continue;
    const s = strip(x);
    if (k !== 'members' && k !== 'roles' && isEmpty(s)) continue;
    out[k] = s;
  }
  return out;
}

function isEmpty(v: unknown): boolean {
  if (v === null) return true;
  if (Array.isArray(v)) return v.length === 0;
  return typeof v === 'object' && Object.keys(v as object).length === 0;
}

/**
 * The epoch of a policy (issue 19, DESIGN.md "Control plane"): the first 16 hex digits of the
 * SHA-256 of its canonical JSON. The same policy always has the same epoch, on every instance.
 */
export function policyEpoch(policy: Policy): string {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify(canonicalPolicy(policy)))
    .digest('hex')
    .slice(0, 16);
}

const epochs = new WeakMap<Config, string>();

/** The epoch of a loaded config's policy, computed once per config object (audit lines carry it). */
export function configEpoch(config: Config): string {
  let e = epochs.get(config);
  if (e === undefined) {
    e = policyEpoch(policyOfConfig(config));
    epochs.set(config, e);
  }
  return e;
}

/**
 * The policy as YAML, the file `pgwarden policy export` writes: canonical (see
 * {@link canonicalPolicy}), block style, so that export after import gives the same file.
 */
export function policyToYaml(policy: Policy): string {
  return `# pgwarden policy, written by \`pgwarden policy export\`; load with \`pgwarden policy import\`.\n${YAML.stringify(
    canonicalPolicy(policy),
    { lineWidth: 0 },
  )}`;
}

/**
 * Reads a policy file (YAML, the policy fields of a config; other config fields are refused as
 * unknown keys). Throws {@link PolicyInvalidError} for YAML syntax errors (path `(top level)`) and
 * every validation issue.
 */
export function parsePolicyYaml(text: string): Policy {
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0)
    throw new PolicyInvalidError(
      doc.errors.map((e) => ({ path: '(top level)', parts: [], message: e.message.split('\n')[0] ?? '' })),
    );
  return validatePolicy(doc.toJS());
}

/** One difference between two policies, at the level of a named object (`roles.analyst`, `workspace`). */
export interface PolicyChange {
  readonly op: 'added' | 'removed' | 'changed';
  readonly path: string;
}

/**
 * What changed from `before` to `after`, object by object: every user, group, role and API key (by
 * id) added, removed or changed, and `workspace`, `workspace_admins`, `default_role` when changed.
 * The history of the store records this (issue 19: "who, when, what changed"). Verifiers never appear.
 */
export function policyChanges(before: Policy, after: Policy): PolicyChange[] {
  const out: PolicyChange[] = [];
  const same = (a: unknown, b: unknown) => JSON.stringify(strip(a)) === JSON.stringify(strip(b));
  for (const field of ['users', 'groups', 'roles'] as const) {
    const a = before[field] as Record<string, unknown>;
    const b = after[field] as Record<string, unknown>;
    for (const name of Object.keys(a))
      if (!Object.hasOwn(b, name)) out.push({ op: 'removed', path: `${field}.${name}` });
    for (const [name, v] of Object.entries(b)) {
      if (!Object.hasOwn(a, name)) out.push({ op: 'added', path: `${field}.${name}` });
      else if (!same(a[name], v)) out.push({ op: 'changed', path: `${field}.${name}` });
    }
  }
  const keysA = new Map(before.api_keys.map((k) => [k.id, k]));
  const keysB = new Map(after.api_keys.map((k) => [k.id, k]));
  for (const id of keysA.keys()) if (!keysB.has(id)) out.push({ op: 'removed', path: `api_keys.${id}` });
  for (const [id, k] of keysB) {
    const old = keysA.get(id);
    if (!old) out.push({ op: 'added', path: `api_keys.${id}` });
    else if (!same(old, k)) out.push({ op: 'changed', path: `api_keys.${id}` });
  }
  for (const field of ['workspace', 'workspace_admins', 'default_role'] as const)
    if (!same(before[field], after[field])) out.push({ op: 'changed', path: field });
  return out;
}

/** The empty policy: no users, no roles (what a new store holds before its first import). */
export function emptyPolicy(): Policy {
  return validatePolicy({});
}

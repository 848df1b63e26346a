// `pgwarden keys create|rotate|revoke|list`: edits the keys file beside the config, or the policy store it names, and prints a new token once.
import { alignedTable, paint } from './aligned-table.js';
import { createKey, keyStatus, parseExpiry, revokeKey, rotateKey } from './api-keys.js';
import { ConfigError, loadConfig } from './config-load.js';
import type { Config } from './config-schema.js';
import { keysFilePath, readKeysFile, writeKeysFile } from './keys-file.js';
import type { ApiKey, Policy } from './policy-schema.js';
import { PolicyStore, PolicyStoreUnavailableError } from './policy-store.js';

/** What the CLI prints and the code it exits with: 0 done, 2 usage or config error. */
export interface KeysOutcome {
  readonly exitCode: 0 | 2;
  readonly stdout: string;
  readonly stderr: string;
}

/** Options shared by every `keys` subcommand. */
export interface KeysOptions {
  readonly config: string;
  readonly json?: boolean;
  readonly colour?: boolean;
  /** ms since the epoch; default Date.now(). */
  readonly now?: number;
  /** PBKDF2 iterations for new verifiers; default 4096. */
  readonly iterations?: number;
}

/** The default lifetime of a new key when `--expires` is not given. */
export const DEFAULT_KEY_EXPIRY = '90d';

function fail(message: string): KeysOutcome {
  return { exitCode: 2, stdout: '', stderr: `pgwarden keys: ${message}\n` };
}

/** An opened config: its keys file (null when it names none), that file's keys and the inline ones. */
interface Opened<F> {
  readonly ok: true;
  readonly config: Config;
  readonly file: F;
  readonly keys: ApiKey[];
  readonly inline: ApiKey[];
}

/**
 * Loads the config (never connecting upstream, so its upstream variables need not be set) and the
 * keys file it names; a message when either is unusable. Without `keys_file`, `list` still lists
 * the keys defined inline (`keysFile` null); the other commands need the file.
 */
function open(opts: KeysOptions): Opened<string> | { ok: false; out: KeysOutcome };
function open(
  opts: KeysOptions,
  keysFileNeeded: false,
): Opened<string | null> | { ok: false; out: KeysOutcome };
function open(
  opts: KeysOptions,
  keysFileNeeded = true,
): Opened<string | null> | { ok: false; out: KeysOutcome } {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(opts.config, process.env, { needsUpstream: false });
  } catch (e) {
    if (e instanceof ConfigError)
      return { ok: false, out: { exitCode: 2, stdout: '', stderr: `${e.message}\n` } };
    throw e;
  }
  const kf = loaded.config.keys_file;
  if (kf === undefined) {
    if (!keysFileNeeded)
      return { ok: true, config: loaded.config, file: null, keys: [], inline: loaded.config.api_keys };
    return {
      ok: false,
      out: fail(
        `${opts.config} names no keys file; add \`keys_file: pgwarden.keys.yaml\` (beside the config)`,
      ),
    };
  }
  const file = keysFilePath(loaded.file, kf);
  const read = readKeysFile(file);
  if (!read.ok) return { ok: false, out: fail(read.problems.join('\n  ')) };
  const fromFile = new Set(read.keys.map((k) => k.id));
  const inline = loaded.config.api_keys.filter((k) => !fromFile.has(k.id));
  return { ok: true, config: loaded.config, file, keys: read.keys, inline };
}

/** The refusal to rotate or revoke a key that the config defines inline (only its file is edited). */
function inlineKey(opts: KeysOptions, inline: readonly ApiKey[], id: string): KeysOutcome | undefined {
  if (!inline.some((k) => k.id === id)) return undefined;
  return fail(`key ${id} is defined inline in ${opts.config} (api_keys): edit it there`);
}

function save(file: string, keys: readonly ApiKey[]): KeysOutcome | undefined {
  try {
    writeKeysFile(file, keys);
    return undefined;
  } catch (e) {
    return fail(`cannot write ${file}: ${(e as Error).message}`);
  }
}

function tokenOutcome(
  opts: KeysOptions,
  verb: string,
  key: ApiKey,
  token: string,
  extra: string[],
  home: KeyHome,
): KeysOutcome {
  if (opts.json) {
    const out = { id: key.id, token, roles: key.roles, expires_at: key.expires_at };
    return {
      exitCode: 0,
      stdout: `${JSON.stringify({ ...out, ...(key.previous_expires_at ? { previous_expires_at: key.previous_expires_at } : {}) })}\n`,
      stderr: '',
    };
  }
  const rows = [
    ['key id:', key.id],
    ['token:', paint(token, 'bold', opts.colour ?? false)],
    ['roles:', key.roles.join(', ')],
    ['expires:', key.expires_at ?? 'never'],
  ];
  return {
    exitCode: 0,
    stdout: `${verb} API key ${key.id}.\n${alignedTable(rows, '  ')}${[
      'The token is shown once: store it now. Only its SCRAM verifier is kept.',
      'Log in with the key id as the user name and the token as the password.',
      ...extra,
      takesEffect(home),
    ].join('\n')}\n`,
    stderr: '',
  };
}

/** Where a key edit is written: the keys file, or (with `policy_store`) a new version of the store. */
type KeyHome = { readonly kind: 'file' } | { readonly kind: 'store'; readonly version: number };

/**
 * One key edit over a list of keys: the new list and what to print, or a refusal. `policy` is the
 * policy the edit is checked against (its roles, users and every key, inline ones included).
 */
type KeyEdit = (
  keys: readonly ApiKey[],
  policy: Pick<Config, 'roles' | 'users' | 'api_keys'>,
) => { ok: true; keys: ApiKey[]; out: (home: KeyHome) => KeysOutcome } | { ok: false; out: KeysOutcome };

/** Thrown inside a store commit to abandon it with the edit's refusal (nothing is written). */
class EditRefused extends Error {
  constructor(readonly out: KeysOutcome) {
    super('key edit refused');
  }
}

/** How a change takes effect where it was written. */
function takesEffect(home: KeyHome): string {
  return home.kind === 'store'
    ? `The policy store now holds version ${home.version}; every instance applies it at once.`
    : 'Reload the proxy (SIGHUP) for the change to take effect.';
}

/**
 * Runs `edit` where the config keeps its keys: with `policy_store`, inside one commit of a new
 * store version (author `pgwarden keys`; the store's own roles and keys checked, NOTIFY to every
 * instance); else on the keys file (keys the config defines inline are refused by `inlineId`).
 * Exit 2 for a config, keys-file or store problem (the store unreachable: its redacted address).
 */
async function runEdit(
  opts: KeysOptions,
  summary: string,
  edit: KeyEdit,
  inlineId?: string,
): Promise<KeysOutcome> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(opts.config, process.env, { needsUpstream: false });
  } catch (e) {
    if (e instanceof ConfigError) return { exitCode: 2, stdout: '', stderr: `${e.message}\n` };
    throw e;
  }
  const url = loaded.config.policy_store;
  if (url === undefined) {
    const o = open(opts);
    if (!o.ok) return o.out;
    if (inlineId !== undefined) {
      const inline = inlineKey(opts, o.inline, inlineId);
      if (inline) return inline;
    }
    const r = edit(o.keys, o.config);
    if (!r.ok) return r.out;
    return save(o.file, r.keys) ?? r.out({ kind: 'file' });
  }
  let store: PolicyStore | undefined;
  try {
    store = await PolicyStore.open(url);
    let printed: ((home: KeyHome) => KeysOutcome) | undefined;
    const result = await store.commit({ author: 'pgwarden keys', summary }, ({ current }) => {
      const r = edit(current.policy.api_keys, current.policy);
      if (!r.ok) throw new EditRefused(r.out);
      printed = r.out;
      return { ...current.policy, api_keys: r.keys } satisfies Policy;
    });
    if (!printed) throw new Error('key edit ran no change');
    return printed({ kind: 'store', version: result.after.version });
  } catch (e) {
    if (e instanceof EditRefused) return e.out;
    if (e instanceof PolicyStoreUnavailableError) return fail(e.message);
    throw e;
  } finally {
    await store?.close();
  }
}

/**
 * `keys create`: a new key holding exactly `roles` (each must exist in the policy), expiring per
 * `expires` (`never`, `<n>d`, `<n>h`, an ISO date; at most one year; default {@link DEFAULT_KEY_EXPIRY}).
 * Prints the token once. Written to the keys file, or to the policy store the config names.
 * Exit 2 for an unknown role, a bad expiry, no `keys_file` (without a store), an invalid config.
 * Source: issue 4, "API keys".
 */
export function keysCreate(
  opts: KeysOptions & { roles: readonly string[]; expires?: string; description?: string },
): Promise<KeysOutcome> {
  if (opts.roles.length === 0) return Promise.resolve(fail('at least one --role is required'));
  const now = opts.now ?? Date.now();
  const expiry = parseExpiry(opts.expires ?? DEFAULT_KEY_EXPIRY, now);
  if (!expiry.ok) return Promise.resolve(fail(expiry.message));
  const createOpts = {
    roles: opts.roles,
    expiresAt: expiry.expiresAt,
    now,
    ...(opts.description !== undefined ? { description: opts.description } : {}),
    ...(opts.iterations !== undefined ? { iterations: opts.iterations } : {}),
  };
  return runEdit(opts, `API key created (roles ${opts.roles.join(', ')})`, (keys, policy) => {
    const unknown = opts.roles.filter((r) => !Object.hasOwn(policy.roles, r));
    if (unknown.length > 0)
      return { ok: false, out: fail(`no role ${unknown.map((r) => `"${r}"`).join(', ')} in the policy`) };
    const taken = new Set([...policy.api_keys.map((k) => k.id), ...Object.keys(policy.users)]);
    let made = createKey(keys, createOpts);
    while (taken.has(made.key.id)) made = createKey(keys, createOpts);
    return {
      ok: true,
      keys: made.keys,
      out: (home) => tokenOutcome(opts, 'Created', made.key, made.token, [], home),
    };
  });
}

/**
 * `keys rotate <id>`: a new token for the key; the old one stays valid for 24 hours (issue 4).
 * Exit 2 for a key not in the keys file (or store), or one that is revoked or expired.
 */
export function keysRotate(opts: KeysOptions & { id: string }): Promise<KeysOutcome> {
  const now = opts.now ?? Date.now();
  return runEdit(
    opts,
    `API key ${opts.id} rotated`,
    (keys) => {
      const r = rotateKey(keys, opts.id, now);
      if (!r.ok) return { ok: false, out: fail(r.message) };
      return {
        ok: true,
        keys: r.keys,
        out: (home) =>
          tokenOutcome(
            opts,
            'Rotated',
            r.key,
            r.token,
            [`The previous token stays valid until ${r.key.previous_expires_at}.`],
            home,
          ),
      };
    },
    opts.id,
  );
}

/** `keys revoke <id>`: the key can no longer log in once the proxy applies it. Exit 2 for an unknown key. */
export function keysRevoke(opts: KeysOptions & { id: string }): Promise<KeysOutcome> {
  return runEdit(
    opts,
    `API key ${opts.id} revoked`,
    (keys) => {
      const r = revokeKey(keys, opts.id);
      if (!r.ok) return { ok: false, out: fail(r.message) };
      return {
        ok: true,
        keys: r.keys,
        out: (home) => ({
          exitCode: 0,
          stdout: opts.json
            ? `${JSON.stringify({ id: opts.id, revoked: true })}\n`
            : home.kind === 'store'
              ? `Revoked API key ${opts.id}. ${takesEffect(home)} Its open sessions are closed.\n`
              : `Revoked API key ${opts.id}. Reload the proxy (SIGHUP): its open sessions are then closed.\n`,
          stderr: '',
        }),
      };
    },
    opts.id,
  );
}

/**
 * `keys list`: every key with its roles, status, creation, expiry and rotation window: those of
 * the keys file, then those the config defines inline (`api_keys`), marked `inline`; with
 * `policy_store`, the store's current keys (marked `store`).
 */
export async function keysList(opts: KeysOptions): Promise<KeysOutcome> {
  let listed: { keys: readonly ApiKey[]; inline: readonly ApiKey[]; where: string; none: string };
  const o = open(opts, false);
  if (!o.ok) return o.out;
  const url = o.config.policy_store;
  if (url !== undefined) {
    let store: PolicyStore | undefined;
    try {
      store = await PolicyStore.open(url);
      const current = await store.current();
      listed = {
        keys: current.policy.api_keys,
        inline: [],
        where: 'store',
        none: `No API keys in the policy store (version ${current.version}).\n`,
      };
    } catch (e) {
      if (e instanceof PolicyStoreUnavailableError) return fail(e.message);
      throw e;
    } finally {
      await store?.close();
    }
  } else
    listed = {
      keys: o.keys,
      inline: o.inline,
      where: 'keys file',
      none: `No API keys in ${o.file ?? opts.config}${o.file ? ` nor inline in ${opts.config}` : ''}.\n`,
    };
  const now = opts.now ?? Date.now();
  const row = (k: ApiKey, inline: boolean) => {
    const overlap =
      k.previous_expires_at && Date.parse(k.previous_expires_at) > now && !k.revoked
        ? k.previous_expires_at
        : null;
    return {
      id: k.id,
      roles: k.roles,
      status: keyStatus(k, now),
      inline,
      created_at: k.created_at ?? null,
      expires_at: k.expires_at,
      previous_token_valid_until: overlap,
      description: k.description ?? null,
    };
  };
  const rows = [...listed.keys.map((k) => row(k, false)), ...listed.inline.map((k) => row(k, true))];
  if (opts.json) return { exitCode: 0, stdout: `${JSON.stringify(rows, null, 2)}\n`, stderr: '' };
  if (rows.length === 0) return { exitCode: 0, stdout: listed.none, stderr: '' };
  const c = opts.colour ?? false;
  const table = [
    ['id', 'roles', 'status', 'defined', 'created', 'expires', 'old token until', 'description'],
    ...rows.map((r) => [
      r.id,
      r.roles.join(','),
      paint(r.status, r.status === 'active' ? 'green' : 'red', c),
      r.inline ? 'inline' : listed.where,
      r.created_at ?? '-',
      r.expires_at ?? 'never',
      r.previous_token_valid_until ?? '-',
      r.description ?? '',
    ]),
  ];
  return { exitCode: 0, stdout: alignedTable(table), stderr: '' };
}

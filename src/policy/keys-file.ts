// The API keys file beside the config: its schema, reading it, and writing it back atomically.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { formatIssue } from './config-issues.js';
import { type ApiKey, apiKeySchema } from './policy-schema.js';

/** The keys file: `api_keys:` and a list of keys, each as in the config (issue 4). */
export const keysFileSchema = z.object({ api_keys: z.array(apiKeySchema).default([]) }).strict();

/** What reading a keys file gives: its keys, or the problems found (each `file: path: message`). */
export type KeysFileRead =
  | { readonly ok: true; readonly keys: ApiKey[]; readonly exists: boolean }
  | { readonly ok: false; readonly problems: string[] };

/**
 * Where `keys_file` points: resolved against the config file's directory (config-schema.ts:
 * "relative to the config file"). Inputs: the absolute config path and the field's value.
 */
export function keysFilePath(configFile: string, keysFile: string): string {
  return path.resolve(path.dirname(configFile), keysFile);
}

/**
 * Parses keys file text. Input: the YAML text and the file name (for messages). Output: the validated
 * keys, or every problem as `<file>: api_keys[0].expires_at: …` (YAML syntax included). Never throws.
 */
export function parseKeysFile(text: string, file: string): KeysFileRead {
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0)
    return {
      ok: false,
      problems: doc.errors.map((e) => `${file}: ${e.message.split('\n')[0] ?? e.message}`),
    };
  const parsed = keysFileSchema.safeParse(doc.toJS() ?? {});
  if (!parsed.success)
    return { ok: false, problems: parsed.error.issues.map((i) => `${file}: ${formatIssue(i)}`) };
  return { ok: true, keys: parsed.data.api_keys, exists: true };
}

/**
 * Reads and validates the keys file at `file`. A file that does not exist holds no keys
 * (`exists: false`): `pgwarden keys create` makes it. Any other read error is a problem. Never throws.
 */
export function readKeysFile(file: string): KeysFileRead {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, keys: [], exists: false };
    return { ok: false, problems: [`${file}: cannot read: ${(e as Error).message}`] };
  }
  return parseKeysFile(text, file);
}

/**
 * Writes `keys` to `file` atomically (a temporary file in the same directory, mode 0600, then
 * rename), so a proxy reloading at the same moment reads the old file or the new one, never half.
 * Throws the file system's error (EACCES, ENOENT for a missing directory, …).
 */
export function writeKeysFile(file: string, keys: readonly ApiKey[]): void {
  const header =
    '# pgwarden API keys, edited by `pgwarden keys`. Tokens are stored only as SCRAM verifiers.\n' +
    '# Reload the proxy (SIGHUP) after a change.\n';
  const body = YAML.stringify({ api_keys: keys.map(stripDefaults) });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  fs.writeFileSync(tmp, header + body, { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** A key as written: fields left at their default are left out, so the file stays short. */
function stripDefaults(k: ApiKey): Record<string, unknown> {
  const out: Record<string, unknown> = { ...k };
  for (const [name, value] of Object.entries(out)) if (value === undefined) delete out[name];
  if (out.revoked === false) delete out.revoked;
  return out;
}

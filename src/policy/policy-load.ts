// A config with the policy in force: the file's own, or — with `policy_store` — the store's current version (check, keys, mcp).
import { type LoadedConfig, loadConfig, type ParseOptions } from './config-load.js';
import { withPolicy } from './policy-document.js';
import { PolicyStore } from './policy-store.js';

/**
 * Loads `file` like {@link loadConfig}; when it names `policy_store`, reads the store's current
 * policy (one snapshot) and returns the config with it merged in (the file's instance fields kept),
 * as `serve` does at start (policy-source.ts). Throws ConfigError for a bad file, and
 * PolicyStoreUnavailableError (policy-store.ts) when the store cannot be reached: the caller never
 * falls back to the file, which holds no policy then (issue 19).
 */
export async function loadConfigWithPolicy(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  opts: ParseOptions = {},
): Promise<LoadedConfig> {
  const loaded = loadConfig(file, env, opts);
  const url = loaded.config.policy_store;
  if (url === undefined) return loaded;
  const store = await PolicyStore.open(url);
  try {
    const stored = await store.current();
    return { ...loaded, config: withPolicy(loaded.config, stored.policy) };
  } finally {
    await store.close();
  }
}

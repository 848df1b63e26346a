// The policy a long-running command (serve, demo, mcp) starts from: the config file's, or the policy store's kept current by NOTIFY.
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import type { PolicySource } from '../policy/policy-source.js';

/**
 * The policy of `serve` (and of `demo` and `mcp`): undefined when `instance` names no
 * `policy_store` (the file's policy is used as loaded); else a started PolicySource
 * (src/policy/policy-source.ts) whose changes arrive, by NOTIFY, at `onChange`. When the store
 * cannot be reached and no `policy_cache` helps (PolicyStoreUnavailableError), prints
 * `pgwarden <command>: <message>` on stderr and exits 1; any other error is thrown.
 */
export async function servePolicy(
  instance: LoadedConfig,
  logger: Logger,
  onChange: (next: LoadedConfig) => void,
  command = 'serve',
): Promise<PolicySource | undefined> {
  if (instance.config.policy_store === undefined) return undefined;
  const { PolicySource } = await import('../policy/policy-source.js');
  const { PolicyStoreUnavailableError } = await import('../policy/policy-store.js');
  try {
    return await PolicySource.start(instance, logger, onChange);
  } catch (e) {
    if (!(e instanceof PolicyStoreUnavailableError)) throw e;
    process.stderr.write(
      `pgwarden ${command}: ${e.message}
Refusing to start without a policy; configure policy_cache to start from the last good policy.
`,
    );
    process.exit(1);
  }
}

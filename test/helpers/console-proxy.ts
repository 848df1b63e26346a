// A test proxy serving the wire admin console (`-d pgwarden`) over the demo config, support also holding audit_read; its RELOADs counted.
import { wireConsole } from '../../src/admin/wire-console.js';
import { demoConfigObject, loadTestConfig, startTestProxy, type TestProxy } from './proxy.js';

/** The demo config; bob's role (support) also holds audit_read, not workspace_settings; alice (analyst) holds neither. */
export function consoleConfig(): Record<string, unknown> {
  const c = demoConfigObject();
  const roles = c.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles.support!.permissions.push({ effect: 'allow', actions: ['audit_read'] });
  return c;
}

/**
 * Starts a test proxy on consoleConfig() with the wire admin console; the console's RELOAD reloads
 * consoleConfig() again, and `reloads()` says how many times it did. Rejects when the proxy cannot start.
 */
export async function startConsoleProxy(): Promise<{ proxy: TestProxy; reloads: () => number }> {
  let reloads = 0;
  const proxy: TestProxy = await startTestProxy(consoleConfig(), {
    proxy: {
      console: wireConsole,
      reloadConfig: async () => {
        reloads++;
        proxy.server.reload(loadTestConfig(consoleConfig()));
      },
    },
  });
  return { proxy, reloads: () => reloads };
}

// Finds who a startup `user` names (a workspace user or an API key) and the SCRAM verifier it logs in with.
import type { Config } from './config-schema.js';

/**
 * A principal that may log in: a workspace user (`kind: 'user'`) or an API key (`kind: 'api-key'`,
 * the key id is the user name on the wire, issue 4). `verifiers` holds one SCRAM-SHA-256 verifier
 * string per token that is valid now (a rotated key keeps its previous token for 24 hours), or
 * `password` for a demo user whose plain password the config holds.
 */
export type Principal =
  | {
      readonly kind: 'user';
      readonly name: string;
      readonly verifiers: readonly string[];
      readonly password?: string;
    }
  | {
      readonly kind: 'api-key';
      readonly name: string;
      readonly verifiers: readonly string[];
      readonly roles: readonly string[];
    };

/**
 * Looks up `name` at time `now` (ms since the epoch). Returns null for an unknown name, a disabled
 * user, a revoked or expired key: the caller then runs a doomed SCRAM exchange so the answer does
 * not tell whether the name exists (28P01 either way, as PostgreSQL does).
 */
export function findPrincipal(config: Config, name: string, now: number): Principal | null {
  const user = Object.hasOwn(config.users, name) ? config.users[name] : undefined;
  if (user) {
    if (user.disabled) return null;
    return user.scram
      ? { kind: 'user', name, verifiers: [user.scram] }
      : { kind: 'user', name, verifiers: [], password: user.password };
  }
  const key = config.api_keys.find((k) => k.id === name);
  if (!key || key.revoked) return null;
  if (key.expires_at !== null && Date.parse(key.expires_at) <= now) return null;
  const verifiers = [key.scram];
  if (key.previous_scram && key.previous_expires_at && Date.parse(key.previous_expires_at) > now) {
    verifiers.push(key.previous_scram);
  }
  return { kind: 'api-key', name, verifiers, roles: key.roles };
}

// `pgwarden keys create|rotate|revoke|list`: the options handed to src/policy/keys-command.ts, its outcome printed.
import { colour, finish } from './command-outcome.js';

/**
 * `pgwarden keys create`: a key holding exactly `opts.role` (one or more role names), expiring
 * `opts.expires` (never, <n>d, <n>h or an ISO date). Prints the token once; the exit code is
 * keysCreate's (src/policy/keys-command.ts).
 */
export async function keysCreateAction(opts: {
  config: string;
  role: string[];
  expires: string;
  description?: string;
  json?: boolean;
}): Promise<void> {
  const { keysCreate } = await import('../policy/keys-command.js');
  finish(await keysCreate({ ...opts, roles: opts.role, colour: colour() }));
}

/** `pgwarden keys rotate <id>`: a new token for key `id` (pgw_…); the exit code is keysRotate's. */
export async function keysRotateAction(id: string, opts: { config: string; json?: boolean }): Promise<void> {
  const { keysRotate } = await import('../policy/keys-command.js');
  finish(await keysRotate({ ...opts, id, colour: colour() }));
}

/** `pgwarden keys revoke <id>`: revokes key `id` (pgw_…); the exit code is keysRevoke's. */
export async function keysRevokeAction(id: string, opts: { config: string; json?: boolean }): Promise<void> {
  const { keysRevoke } = await import('../policy/keys-command.js');
  finish(await keysRevoke({ ...opts, id }));
}

/** `pgwarden keys list`: the keys with roles, status, expiry and rotation window; the exit code is keysList's. */
export async function keysListAction(opts: { config: string; json?: boolean }): Promise<void> {
  const { keysList } = await import('../policy/keys-command.js');
  finish(await keysList({ ...opts, colour: colour() }));
}

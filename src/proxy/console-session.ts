// A client that named database `pgwarden`: its console greeting, then the wire admin console reads its messages.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import type { Config } from '../policy/config-schema.js';
import {
  type ConnectionRequest,
  connectionRolesAfterReload,
  resolveConnectionRoles,
} from '../policy/connection-roles.js';
import type { Principal } from '../policy/principals.js';
import { isWorkspaceAdmin } from '../policy/resolve-roles.js';
import { readyForQuery } from '../wire/backend-encode.js';
import { type ClientError, fatal } from './client-error.js';
import { CONSOLE_DATABASE, type ConsoleHandler, consoleParameters } from './console-port.js';

/** A logged-in client of the console, as its session hands it over. */
export interface ConsoleClient {
  readonly id: number;
  readonly socket: net.Socket;
  readonly log: Logger;
  readonly principal: Principal;
  /** Who logged in and what the connection named (the caller is resolved again from it per command). */
  readonly login: { readonly user: string } & ConnectionRequest;
  readonly applicationName: string;
  /** Sends the FATAL (when given) and closes the session. */
  readonly terminate: (err?: ClientError) => void;
}

/**
 * The roles a console caller acts with: its connection's (seeds 000-002), never a viewer's — the
 * console acts for its caller only. Throws FATAL 28000 when it names a viewer or resolves to no role.
 */
export function consoleRoles(config: Config, principal: Principal, request: ConnectionRequest): string[] {
  if (request.viewer !== undefined)
    throw fatal('28000', 'the admin console acts for its caller only: pgwarden.viewer is not allowed there');
  const resolution = resolveConnectionRoles(config, principal, request, Date.now());
  if (!resolution.ok) throw fatal(resolution.sqlstate, resolution.message);
  return resolution.roles;
}

/**
 * Greets a console client as a PostgreSQL 15 server does (its ParameterStatus messages and
 * ReadyForQuery 'I') and hands it to `console` (issue 21). The caller is resolved again under the
 * config in force for each command (undefined once the principal is gone); a console FATAL
 * closes the session through `client.terminate`.
 */
export function serveConsole(
  console: ConsoleHandler,
  client: ConsoleClient,
  config: () => LoadedConfig,
): void {
  const { socket, principal, login } = client;
  socket.cork();
  for (const m of consoleParameters(principal.name, client.applicationName)) socket.write(m);
  socket.write(readyForQuery('I'));
  socket.uncork();
  client.log.info(
    { event: 'ready', user: login.user, database: CONSOLE_DATABASE },
    'admin console session ready',
  );
  console.serve({
    id: client.id,
    socket,
    log: client.log,
    caller: () => {
      const next = config().config;
      const r = connectionRolesAfterReload(next, login, Date.now());
      if (!r.ok) return undefined;
      return {
        name: principal.name,
        roles: r.roles,
        workspaceAdmin: principal.kind === 'user' && isWorkspaceAdmin(next, principal.name),
      };
    },
    terminate: (f) => client.terminate(f ? fatal(f.code, f.message) : undefined),
  });
}

// `pgwarden mcp`: the proxy on an internal `mcp` listener, pooled key connections to it, and the MCP transport.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Logger } from 'pino';
import type { LoadedConfig } from '../policy/config-load.js';
import { isLoopback, splitHostPort } from '../policy/config-schema.js';
import type { ProxyServer } from '../proxy/proxy-port.js';
import { startProxy } from '../proxy/server.js';
import { ApiKeyAuthenticator } from './api-key-auth.js';
import { type HttpEndpoint, startHttpEndpoint } from './http-endpoint.js';
import { ProxyPools } from './proxy-pools.js';
import { createMcpServer } from './tool-server.js';

/** The environment variable that carries the API key token for the stdio transport. */
export const API_KEY_ENV = 'PGWARDEN_API_KEY';

/** `pgwarden mcp` cannot start: no usable key on stdio. The CLI prints the message and exits 2. */
export class McpStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'McpStartError';
  }
}

/** Options of {@link startMcpServer}: `http` (`host:port`) for Streamable HTTP, else stdio with `apiKey`. */
export interface McpServerOptions {
  readonly http?: string;
  /** The token for stdio (from {@link API_KEY_ENV}). */
  readonly apiKey?: string;
  /** Reported in the MCP handshake. */
  readonly version: string;
  /**
   * Where audit lines go, the proxy's per statement and the tools' per call (config `audit.file`,
   * makeAuditLogger); the main logger without.
   */
  readonly auditLogger?: Logger;
}

/** A running `pgwarden mcp`. */
export interface McpRunning {
  /** The HTTP endpoint's address, when serving HTTP. */
  readonly http?: HttpEndpoint['address'];
  /** The internal listener the tools connect to (loopback, connection kind `mcp`). */
  readonly proxy: ProxyServer['address'];
  /** Applies a new config (SIGHUP): the proxy's, the key checks', and fresh pooled sessions. */
  reload(next: LoadedConfig): Promise<void>;
  /** Resolves when a stdio client has gone (stdin ended); never for HTTP. */
  readonly ended: Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts `pgwarden mcp`. Design (issue 10, DESIGN.md `mcp/`: "driving the proxy's own session
 * code"): `startProxy(loaded, logger, { connection: 'mcp', listen: '127.0.0.1:0' })` runs the real
 * proxy on an internal loopback port — SCRAM, role resolution, the unruled-database refusal at
 * connect, analysis, decision, masking, error redaction, audit — and every tool reaches the database
 * only through it, logged in as the caller's API key (ProxyPools). There is no other path to the
 * upstream. Only API keys authenticate (ApiKeyAuthenticator): on stdio the token in `apiKey`, checked
 * at start (throws {@link McpStartError} when missing or invalid) and again on every tool call; over
 * HTTP the bearer token of every request (401 otherwise, http-endpoint.ts).
 * Rejects when the internal listener or the HTTP address cannot be bound.
 */
export async function startMcpServer(
  initial: LoadedConfig,
  logger: Logger,
  opts: McpServerOptions,
): Promise<McpRunning> {
  let current = initial;
  const auth = new ApiKeyAuthenticator(() => current.config);
  if (opts.http === undefined) {
    const check = auth.authenticate(opts.apiKey);
    if (!check.ok)
      throw new McpStartError(
        check.reason === 'missing'
          ? `${API_KEY_ENV} is not set: pgwarden mcp on stdio needs an API key token (pgwarden keys create)`
          : `${API_KEY_ENV} is not a valid API key token (unknown, revoked or expired)`,
      );
  }
  const audit = opts.auditLogger ?? logger;
  const proxy = await startProxy(initial, logger, {
    connection: 'mcp',
    listen: '127.0.0.1:0',
    auditLogger: audit,
  });
  const limits = initial.config.limits;
  const pools = new ProxyPools({
    host: '127.0.0.1',
    port: proxy.address.port,
    logger,
    statementTimeoutMs: limits.mcp_statement_timeout_ms,
    waitMs: limits.mcp_pool_wait_ms,
  });
  const shared = {
    config: () => current.config,
    pools,
    logger: audit,
    version: opts.version,
    catalog: (database: string, refresh?: boolean) => proxy.catalog(database, { refresh: refresh === true }),
  };

  let endpoint: HttpEndpoint | undefined;
  let ended: Promise<void>;
  if (opts.http !== undefined) {
    const [host, port] = splitHostPort(opts.http);
    try {
      endpoint = await startHttpEndpoint(host, port, auth, shared, logger);
    } catch (e) {
      await proxy.close(0);
      throw e;
    }
    logger.info({ event: 'mcp-listening', transport: 'http', ...endpoint.address }, 'pgwarden mcp listening');
    if (!isLoopback(host))
      logger.warn(
        { event: 'mcp-plain-http', host },
        'MCP over plain HTTP on a non-loopback address: API key tokens cross the network in clear; put TLS in front',
      );
    ended = new Promise(() => {});
  } else {
    const apiKey = opts.apiKey;
    const server = createMcpServer({
      ...shared,
      transport: 'stdio',
      identity: () => auth.authenticate(apiKey),
    });
    ended = new Promise((resolve) => {
      process.stdin.once('end', () => resolve());
      process.stdin.once('close', () => resolve());
    });
    await server.connect(new StdioServerTransport());
    logger.info({ event: 'mcp-listening', transport: 'stdio' }, 'pgwarden mcp serving on stdio');
  }

  return {
    ...(endpoint ? { http: endpoint.address } : {}),
    proxy: proxy.address,
    ended,
    async reload(next) {
      current = next;
      proxy.reload(next);
      // Pooled sessions keep the config they logged in under: start fresh ones under the new policy.
      await pools.closeAll();
    },
    async close() {
      await endpoint?.close();
      await pools.closeAll();
      await proxy.close(1000);
    },
  };
}

// Streamable HTTP for `pgwarden mcp --http HOST:PORT`: a bearer API key checked on every request, 401 before any tool.
import http from 'node:http';
import type { Logger } from 'pino';
import type { ApiKeyAuthenticator } from './api-key-auth.js';
import { JsonResponseTransport, readPost } from './json-response-transport.js';
import { auditRejectedRequest } from './tool-audit.js';
import type { ToolContext } from './tool-call.js';
import { createMcpServer } from './tool-server.js';

/** The path the endpoint serves (the MCP specification's usual `/mcp`). */
export const MCP_PATH = '/mcp';

/** A running HTTP endpoint. */
export interface HttpEndpoint {
  /** The bound address (the real port when asked for port 0). */
  readonly address: { host: string; port: number };
  close(): Promise<void>;
}

/** The token of an `Authorization: Bearer <token>` header; undefined when there is none. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header ?? '');
  return m?.[1];
}

function refuse(
  res: http.ServerResponse,
  status: number,
  message: string,
  headers: http.OutgoingHttpHeaders = {},
  code = -32001,
) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  // A JSON-RPC error body, as the SDK's own transport answers malformed requests.
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/**
 * Serves MCP over Streamable HTTP on `host:port` at {@link MCP_PATH}, stateless: every POST is one
 * JSON-RPC exchange, authenticated on its own — `Authorization: Bearer <token>` (an API key token,
 * see ApiKeyAuthenticator) — before the body is read; a missing or bad key gets 401 with
 * `WWW-Authenticate: Bearer` and no tool runs. An authenticated POST is read and checked
 * (readPost: the SDK transport's 406/415/413/400 answers), then gets a fresh McpServer bound to that
 * token and a {@link JsonResponseTransport} (no session id, JSON responses; notifications alone
 * get 202); GET and DELETE (server-sent streams, session ends) are 405, since the server sends
 * nothing unasked. Other paths are 404.
 * Resolves once listening; rejects when the address cannot be bound (EADDRINUSE, EACCES).
 * Source: MCP specification 2025-06-18, "Transports — Streamable HTTP"; issue 10.
 */
export async function startHttpEndpoint(
  host: string,
  port: number,
  auth: ApiKeyAuthenticator,
  tools: Omit<ToolContext, 'identity' | 'transport'>,
  logger: Logger,
): Promise<HttpEndpoint> {
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname !== MCP_PATH) return refuse(res, 404, `not found: pgwarden serves MCP at ${MCP_PATH}`);
      const token = bearerToken(req.headers.authorization);
      const check = auth.authenticate(token);
      if (!check.ok) {
        auditRejectedRequest(tools.logger, check.reason, req.socket.remoteAddress);
        return refuse(
          res,
          401,
          check.reason === 'missing'
            ? 'missing API key: send Authorization: Bearer <token>'
            : 'invalid API key (unknown, revoked or expired)',
          { 'www-authenticate': 'Bearer realm="pgwarden"' },
        );
      }
      if (req.method !== 'POST') return refuse(res, 405, 'method not allowed', { allow: 'POST' });
      const post = await readPost(req, url);
      if (!('messages' in post)) return refuse(res, post.status, post.message, {}, post.code);
      // The client left while its body was read: nothing to run for it.
      if (req.socket.destroyed) return;
      const mcp = createMcpServer({
        ...tools,
        transport: 'http',
        // Checked again per tool call: the same token, against the config in force then.
        identity: () => auth.authenticate(token),
      });
      const transport = new JsonResponseTransport(res, post);
      await mcp.connect(transport);
      transport.deliver();
      // Notifications only (notifications/initialized): accepted, nothing to answer.
      if (post.requestIds.length === 0) {
        res.writeHead(202).end();
      }
    })().catch((e: unknown) => {
      logger.error({ event: 'mcp-http-error', err: (e as Error).message }, 'mcp request failed');
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as import('node:net').AddressInfo;
  return {
    address: { host: addr.address, port: addr.port },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

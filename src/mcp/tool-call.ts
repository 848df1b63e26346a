// One tool call's frame: the caller authenticated again, the body run, one `mcp-tool` audit line, failures as tool errors.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { Config } from '../policy/config-schema.js';
import type { KeyCheck, McpIdentity } from './api-key-auth.js';
import type { ProxyPools } from './proxy-pools.js';
import type { CatalogSourceFn } from './table-catalog.js';
import { auditToolCall } from './tool-audit.js';
import { ToolFailure, toolErrorResult, toToolFailure } from './tool-errors.js';

/** What the tools need: the config in force, the pools, the audit logger, and who is calling. */
export interface ToolContext {
  readonly config: () => Config;
  readonly pools: ProxyPools;
  /** Where the `mcp-tool` and `mcp-auth-failed` audit lines go (config `audit.file`, or the log). */
  readonly logger: Logger;
  readonly transport: 'stdio' | 'http';
  /**
   * Authenticates the caller for this call: stdio re-checks the key from `PGWARDEN_API_KEY`, HTTP
   * the request's bearer token (a key revoked by a reload, or expired, stops working mid-session).
   */
  readonly identity: () => KeyCheck;
  /** The server's version, reported in the MCP handshake. */
  readonly version: string;
  /** The proxy's shared catalog of a database (ProxyServer.catalog): list_tables and describe_table read it. */
  readonly catalog: CatalogSourceFn;
}

/** What a tool's body hands back on success: the structured content, the text content, what the audit line counts. */
export interface ToolOutput {
  readonly structured: Record<string, unknown>;
  readonly text: string;
  readonly rows?: number;
  readonly truncated?: boolean;
}

/** What the audit line of a call names. */
export interface CallInfo {
  readonly database?: string;
  readonly sql?: string;
}

/**
 * Runs one call of `tool`: authenticates the caller again (`ctx.identity()`; a refusal is a tool
 * error, 28P01, and `body` does not run), runs `body` as that identity, and writes one `mcp-tool`
 * audit line (tool, transport, key id, roles, database, SQL, outcome, SQLSTATE, rows, duration).
 * Output: the result with the body's text and structured content, or a tool error (`isError: true`)
 * whose text is the failure as psql prints it (tool-errors.ts); never rejects.
 */
export async function runToolCall(
  ctx: ToolContext,
  tool: string,
  info: CallInfo,
  body: (identity: McpIdentity) => Promise<ToolOutput>,
): Promise<CallToolResult> {
  const started = performance.now();
  const check = ctx.identity();
  const base = {
    tool,
    transport: ctx.transport,
    ...(info.database !== undefined ? { database: info.database } : {}),
    ...(info.sql !== undefined ? { sql: info.sql } : {}),
  };
  if (!check.ok) {
    const f = new ToolFailure(
      '28P01',
      check.reason === 'missing'
        ? 'no API key: set PGWARDEN_API_KEY to a key token'
        : 'the API key is not valid (unknown, revoked or expired)',
    );
    auditToolCall(ctx.logger, {
      ...base,
      identity: '',
      roles: [],
      outcome: 'refused',
      sqlstate: f.sqlstate,
      reason: f.message,
      durationMs: performance.now() - started,
    });
    return toolErrorResult(f);
  }
  const who = { identity: check.identity.keyId, roles: check.identity.roles };
  try {
    const out = await body(check.identity);
    auditToolCall(ctx.logger, {
      ...base,
      ...who,
      outcome: 'ok',
      ...(out.rows !== undefined ? { rows: out.rows } : {}),
      ...(out.truncated !== undefined ? { truncated: out.truncated } : {}),
      durationMs: performance.now() - started,
    });
    return { content: [{ type: 'text', text: out.text }], structuredContent: out.structured };
  } catch (e) {
    const f = toToolFailure(e);
    auditToolCall(ctx.logger, {
      ...base,
      ...who,
      outcome: f.sqlstate.startsWith('42') || f.sqlstate.startsWith('28') ? 'refused' : 'error',
      sqlstate: f.sqlstate,
      reason: f.message,
      durationMs: performance.now() - started,
    });
    return toolErrorResult(f);
  }
}

/** Annotations of the tools that change nothing. */
export const READ_ONLY = { readOnlyHint: true, destructiveHint: false, openWorldHint: false } as const;

// One audit line per MCP tool call (and per refused HTTP request), with the API key id as the identity.
import type { Logger } from 'pino';
import { normalizeForAudit } from '../proxy/audit-normalize.js';

/** One tool call as the audit records it. Durations in milliseconds. */
export interface ToolAuditEvent {
  readonly tool: string;
  /** The API key id (the identity the proxy's own statement lines carry too). */
  readonly identity: string;
  readonly roles: readonly string[];
  readonly transport: 'stdio' | 'http';
  readonly database?: string;
  /** The caller's SQL, raw; it is normalized (literals replaced) before it is written. */
  readonly sql?: string;
  readonly outcome: 'ok' | 'refused' | 'error';
  readonly sqlstate?: string;
  readonly reason?: string;
  readonly rows?: number;
  readonly truncated?: boolean;
  readonly durationMs: number;
}

/**
 * Writes `e` as a pino line tagged `audit: true`, `event: 'mcp-tool'` — beside the proxy's own
 * per-statement lines (proxy/audit.ts), which every statement a tool runs writes as well. The SQL is
 * normalized with the proxy's `normalizeForAudit` (never the raw values); parameters are never logged.
 * Source: issue 10, "Every call writes an audit line like the wire's, with the key id as the identity".
 */
export function auditToolCall(logger: Logger, e: ToolAuditEvent): void {
  const { sql, ...rest } = e;
  logger.info(
    {
      audit: true,
      event: 'mcp-tool',
      ...rest,
      ...(sql !== undefined ? { sql: normalizeForAudit(sql) } : {}),
    },
    'mcp tool call',
  );
}

/** Writes the audit line of an HTTP request refused before any tool ran (401: no key, or a bad one). */
export function auditRejectedRequest(logger: Logger, reason: string, remote: string | undefined): void {
  logger.warn({ audit: true, event: 'mcp-auth-failed', reason, remote }, 'mcp request refused');
}

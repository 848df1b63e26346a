// A refusal or failure as an MCP tool error: the proxy's own message (as on the wire), never an empty result.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** A failure to report as a tool error: a SQLSTATE and the fields of the ErrorResponse that carried it. */
export class ToolFailure extends Error {
  constructor(
    readonly sqlstate: string,
    message: string,
    readonly detail?: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/** The fields node-postgres puts on a DatabaseError (an ErrorResponse from the proxy). */
interface PgErrorLike {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly detail?: unknown;
  readonly hint?: unknown;
}

/**
 * Turns whatever a tool's database work threw into a {@link ToolFailure}. Input: a pg DatabaseError
 * (the proxy's ErrorResponse: a refusal 42501, a parse error 42601, a redacted data exception, the
 * upstream's own error, a FATAL at connect such as 42501 for a database no role mentions), a
 * ToolFailure (kept), or anything else (a lost connection: 08006 with its message). MESSAGE, DETAIL
 * and HINT are kept as the proxy sent them; POSITION is dropped (it counts in the text the tool sent,
 * which may wrap the caller's SQL).
 */
export function toToolFailure(e: unknown): ToolFailure {
  if (e instanceof ToolFailure) return e;
  const err = (e ?? {}) as PgErrorLike;
  const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const message = text(err.message) ?? String(e);
  const code = text(err.code);
  if (code && /^[0-9A-Z]{5}$/.test(code))
    return new ToolFailure(code, message, text(err.detail), text(err.hint));
  return new ToolFailure('08006', message);
}

/**
 * The tool result for a failure: `isError: true` and one text block, `ERROR:  <message>` then
 * `DETAIL:`/`HINT:` lines and the SQLSTATE — the layout psql prints for the same ErrorResponse.
 * No structured content (the client validates structured content against the success schema).
 */
export function toolErrorResult(f: ToolFailure): CallToolResult {
  const lines = [`ERROR:  ${f.message}`];
  if (f.detail) lines.push(`DETAIL:  ${f.detail}`);
  if (f.hint) lines.push(`HINT:  ${f.hint}`);
  lines.push(`SQLSTATE: ${f.sqlstate}`);
  return { isError: true, content: [{ type: 'text', text: lines.join('\n') }] };
}

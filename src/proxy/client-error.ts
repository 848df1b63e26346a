// The FATAL or ERROR a session ends its client with: an ErrorResponse with its SQLSTATE.
import type { ErrorFields } from '../wire/error-fields.js';
import { ProtocolError } from '../wire/protocol-error.js';
import { StartupParamError } from './startup-params.js';

/** A FATAL or ERROR to send the client: an ErrorResponse with its SQLSTATE. */
export class ClientError extends Error {
  readonly fields: ErrorFields;
  constructor(fields: ErrorFields) {
    super(fields.message);
    this.fields = fields;
  }
}

/** A FATAL with SQLSTATE `code` and `message` (PostgreSQL's ereport(FATAL, …) at start-up or termination). */
export function fatal(code: string, message: string): ClientError {
  return new ClientError({ severity: 'FATAL', code, message });
}

/**
 * The FATAL a failed start-up is answered with: a ClientError's fields; a StartupParamError's or
 * ProtocolError's SQLSTATE (e.g. 08P01, 42704, 0A000) and message; any Error carrying a `sqlstate`.
 * Undefined for any other failure (the caller decides whether the client left or it is 08P01).
 */
export function startupFailureFields(e: unknown): ErrorFields | undefined {
  if (e instanceof ClientError) return e.fields;
  if (e instanceof StartupParamError || e instanceof ProtocolError) {
    return { severity: 'FATAL', code: e.sqlstate, message: e.message };
  }
  if (e instanceof Error && (e as { sqlstate?: string }).sqlstate) {
    return { severity: 'FATAL', code: (e as { sqlstate?: string }).sqlstate as string, message: e.message };
  }
  return undefined;
}

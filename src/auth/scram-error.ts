// The error that ends a SCRAM-SHA-256 exchange, with the SQLSTATE of the FATAL it becomes.

/**
 * A SCRAM failure that ends the authentication exchange, with the SQLSTATE the proxy puts in the
 * FATAL ErrorResponse it sends before closing:
 * - `08P01` protocol_violation: a malformed SCRAM message, a channel-binding or nonce mismatch,
 *   a message out of order, or a malformed/unsupported reply from the upstream server;
 * - `0A000` feature_not_supported: an authorization identity (`a=`) or a mandatory extension
 *   (`m=`), which PostgreSQL refuses the same way;
 * - `28000` invalid_authorization_specification: the upstream server's signature is wrong
 *   (it does not know the password: a spoofed server) or it answered with `e=`.
 * `detail` carries PostgreSQL's errdetail text where it has one.
 * Source: PostgreSQL 15 src/backend/libpq/auth-scram.c, Appendix A "PostgreSQL Error Codes".
 */
export class ScramError extends Error {
  /** Five-character SQLSTATE, see the class docstring. */
  readonly sqlstate: string;
  /** Optional DETAIL for the ErrorResponse. */
  readonly detail: string | undefined;

  /**
   * @param message MESSAGE text in PostgreSQL's style (`malformed SCRAM message`).
   * @param detail DETAIL text or undefined.
   * @param sqlstate five-character SQLSTATE, `08P01` by default.
   */
  constructor(message: string, detail?: string, sqlstate = '08P01') {
    super(detail ? `${message}: ${detail}` : message);
    this.name = 'ScramError';
    this.sqlstate = sqlstate;
    this.detail = detail;
  }
}

/** A ScramError 08P01 "malformed SCRAM message" with `detail` as its DETAIL (auth-scram.c's wording). */
export function malformed(detail: string): ScramError {
  return new ScramError('malformed SCRAM message', detail);
}

// The one error type of the wire codec: a malformed or oversize message, with the SQLSTATE to report.

/**
 * Raised by the framer and every decoder/encoder of `src/wire/` when bytes do not form a valid
 * message. `sqlstate` is what the proxy should put in the FATAL ErrorResponse it sends before
 * closing the connection:
 * - `08P01` protocol_violation: bad length, truncated field, missing NUL, count overrun,
 *   trailing bytes, unknown enum byte;
 * - `54000` program_limit_exceeded: a message longer than the configured maximum;
 * - `0A000` feature_not_supported: a startup packet asking for a protocol major version other than 3;
 * - `22021` character_not_in_repertoire: a string that is not valid UTF-8;
 * - `22023` invalid_parameter_value: a Bind format code other than 0 (text) or 1 (binary).
 * Source: PostgreSQL 15 docs, Appendix A "PostgreSQL Error Codes" and 55.7 "Message Formats".
 */
export class ProtocolError extends Error {
  /** Five-character SQLSTATE, see the class docstring. */
  readonly sqlstate: string;

  /**
   * @param message human-readable description, in the style of Postgres' own messages.
   * @param sqlstate five-character SQLSTATE; defaults to `08P01` protocol_violation.
   */
  constructor(message: string, sqlstate = '08P01') {
    super(message);
    this.name = 'ProtocolError';
    this.sqlstate = sqlstate;
  }
}

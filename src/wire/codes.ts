// PostgreSQL v3 message type bytes, per direction (the first byte of every typed message).

/**
 * Type bytes of messages a client (frontend) sends.
 * `Password` (0x70 'p') also carries SASLInitialResponse, SASLResponse and GSSResponse: which one
 * is meant depends on the authentication exchange in progress, not on the byte.
 * Source: PostgreSQL 15 docs, 55.7 "Message Formats".
 */
export const FrontendCode = {
  Query: 0x51,
  Parse: 0x50,
  Bind: 0x42,
  Describe: 0x44,
  Execute: 0x45,
  Close: 0x43,
  Sync: 0x53,
  Flush: 0x48,
  CopyData: 0x64,
  CopyDone: 0x63,
  CopyFail: 0x66,
  FunctionCall: 0x46,
  Terminate: 0x58,
  Password: 0x70,
} as const;

/** A frontend message type byte. Source: PostgreSQL 15 docs, 55.7 "Message Formats". */
export type FrontendCodeValue = (typeof FrontendCode)[keyof typeof FrontendCode];

/**
 * Type bytes of messages a server (backend) sends. Several share a byte with a frontend message
 * of another meaning (e.g. 0x44 is DataRow here, Describe from the client).
 * Source: PostgreSQL 15 docs, 55.7 "Message Formats".
 */
export const BackendCode = {
  Authentication: 0x52,
  BackendKeyData: 0x4b,
  BindComplete: 0x32,
  CloseComplete: 0x33,
  CommandComplete: 0x43,
  CopyData: 0x64,
  CopyDone: 0x63,
  CopyInResponse: 0x47,
  CopyOutResponse: 0x48,
  CopyBothResponse: 0x57,
  DataRow: 0x44,
  EmptyQueryResponse: 0x49,
  ErrorResponse: 0x45,
  FunctionCallResponse: 0x56,
  NegotiateProtocolVersion: 0x76,
  NoData: 0x6e,
  NoticeResponse: 0x4e,
  NotificationResponse: 0x41,
  ParameterDescription: 0x74,
  ParameterStatus: 0x53,
  ParseComplete: 0x31,
  PortalSuspended: 0x73,
  ReadyForQuery: 0x5a,
  RowDescription: 0x54,
} as const;

/** A backend message type byte. Source: PostgreSQL 15 docs, 55.7 "Message Formats". */
export type BackendCodeValue = (typeof BackendCode)[keyof typeof BackendCode];

/**
 * Request codes carried in the Int32 after the length of an untyped startup-phase message.
 * Protocol 3.0 is 196608 (3 << 16); the others are the reserved "version" 1234.5678/9/80.
 * Source: PostgreSQL 15 docs, 55.7 (StartupMessage, SSLRequest, GSSENCRequest, CancelRequest).
 */
export const StartupCode = {
  Protocol3: 196608,
  CancelRequest: 80877102,
  SSLRequest: 80877103,
  GSSENCRequest: 80877104,
} as const;

/**
 * The extended-query messages that run a statement step (Parse, Bind, Describe, Execute, Close):
 * each may open an implicit transaction that lasts until Sync, and after an error Postgres skips
 * them until Sync (protocol 55.2.3).
 */
export const EXTENDED_QUERY_MESSAGES: ReadonlySet<number> = new Set([
  FrontendCode.Parse,
  FrontendCode.Bind,
  FrontendCode.Describe,
  FrontendCode.Execute,
  FrontendCode.Close,
]);

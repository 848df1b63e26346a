// The columns the wire admin console's SHOW CLIENTS answers with: PgBouncer's names, in PgBouncer's order, then pgwarden's own.
/**
 * SHOW CLIENTS's result columns as PgBouncer names them (type … application_name, PgBouncer's
 * "SHOW CLIENTS" documentation), then `id` and `roles` (pgwarden's session id and the caller's roles).
 */
export const SHOW_CLIENTS_COLUMNS = [
  'type',
  'user',
  'database',
  'state',
  'addr',
  'port',
  'local_addr',
  'local_port',
  'connect_time',
  'request_time',
  'link',
  'tls',
  'application_name',
  'id',
  'roles',
] as const;

// Prepared-statement names pgwarden keeps for its own statements on a client's connection: a client may not prepare, deallocate or close them.

/**
 * The prefix of the names of the statements pgwarden prepares on a client's own upstream
 * connection (its in-band catalog reads, proxy/relay-in-band-catalog.ts). Prepared statements of
 * SQL and of the protocol are one namespace in Postgres: a client's PREPARE or Parse of such a name
 * would stand its own query in for the catalog read pgwarden runs (its rows taken as the catalog),
 * and its DEALLOCATE or Close would drop pgwarden's. Case-sensitive, as the names are.
 */
export const IN_BAND_STATEMENT_PREFIX = 'pgwarden_catalog';

/** Whether a client's PREPARE, Parse, DEALLOCATE or Close of statement `name` is refused ({@link reservedStatementRefusal}). */
export function isReservedStatementName(name: string): boolean {
  return name.startsWith(IN_BAND_STATEMENT_PREFIX);
}

/**
 * The refusal of a client's PREPARE, Parse, DEALLOCATE or Close naming a reserved statement:
 * SQLSTATE 42939 reserved_name (as Postgres answers `CREATE ROLE pg_x`).
 */
export function reservedStatementRefusal(name: string): { sqlstate: string; message: string } {
  return {
    sqlstate: '42939',
    message: `prepared statement name "${name}" is reserved: names beginning with "${IN_BAND_STATEMENT_PREFIX}" are pgwarden's own`,
  };
}

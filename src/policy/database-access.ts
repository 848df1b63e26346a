// Databases nobody has written a rule for: allowed on a local connection, refused at connect otherwise.
import type { Config } from './config-schema.js';
import type { ConnectionKind } from './decision-types.js';

/** The outcome of {@link checkDatabaseAccess}. `unruled` is true for a database no role mentions. */
export type DatabaseAccess =
  | { readonly ok: true; readonly unruled: boolean }
  | {
      readonly ok: false;
      readonly sqlstate: '28000' | '42501' | '3D000';
      readonly message: string;
      readonly detail?: string;
    };

/**
 * True when some rule of some role of the workspace names `database` or `*` (an allow or a deny:
 * either is a mention). App-level rules (no database) do not count.
 * Source: seed 004, "Databases nobody has written a rule for" ("a database that no role in the
 * workspace mentions at all"); DESIGN.md "Decision" step 3 (`*` counts as a mention).
 */
export function databaseIsRuled(config: Config, database: string): boolean {
  for (const role of Object.values(config.roles)) {
    for (const p of role.permissions) {
      if (p.database === '*' || p.database === database) return true;
    }
  }
  return false;
}

/**
 * True when some allow rule of one of `roles` grants a database action on `database` (its name or
 * `*`, at any level below it). A deny grants nothing. Source: issue 16 item 7 ("a connection to a
 * database where none of the caller's roles grants anything is refused at connect").
 */
export function rolesGrantOn(config: Config, roles: readonly string[], database: string): boolean {
  for (const name of roles) {
    const role = Object.hasOwn(config.roles, name) ? config.roles[name] : undefined;
    for (const p of role?.permissions ?? []) {
      if (p.effect === 'allow' && (p.database === '*' || p.database === database)) return true;
    }
  }
  return false;
}

/**
 * Decides at connect whether a caller holding `roles` may open `database` over `connection`.
 * Outputs `{ ok: true, unruled }`, or a refusal to send as FATAL:
 * - 3D000 when the config has no such database;
 * - 28000 when `roles` is empty (seed 000: "A connection left with no role at all is refused");
 * - 42501 for a database no role in the workspace mentions, on a `proxified` or `mcp` connection
 *   (seed 004's table: Local → allowed, Proxified → refused, MCP → refused: "Nothing is granted that
 *   a role did not grant").
 * - 28000 naming the database when it is mentioned but no allow rule of `roles` covers it, on every
 *   connection but `local` (issue 16 item 7: otherwise a caller granted nothing there could still
 *   connect and read what the catalog allowlist shows, such as its table names).
 * A database that one of the caller's roles grants something on is open; what each statement may do
 * is then up to {@link decide} (default deny). Pure; never throws.
 */
export function checkDatabaseAccess(
  config: Config,
  roles: readonly string[],
  database: string,
  connection: ConnectionKind,
): DatabaseAccess {
  if (!Object.hasOwn(config.databases, database)) {
    return { ok: false, sqlstate: '3D000', message: `database "${database}" does not exist` };
  }
  if (roles.length === 0) {
    return {
      ok: false,
      sqlstate: '28000',
      message: 'no role: this connection holds no role of the workspace',
    };
  }
  if (databaseIsRuled(config, database)) {
    if (connection === 'local' || rolesGrantOn(config, roles, database)) return { ok: true, unruled: false };
    return {
      ok: false,
      sqlstate: '28000',
      message: `permission denied for database "${database}"`,
      detail: `None of the roles of this connection (${roles.join(', ')}) grants anything on database ${database}.`,
    };
  }
  if (connection === 'local') return { ok: true, unruled: true };
  return {
    ok: false,
    sqlstate: '42501',
    message: `permission denied for database "${database}"`,
    detail: `No role of the workspace has a rule for database ${database}; a ${connection} connection gets nothing a role did not grant.`,
  };
}

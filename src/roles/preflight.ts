// What `serve` checks of a managed database's administration login at start: CREATEROLE, and grants it can give.
import type pg from 'pg';
import { readUngrantable } from './grant-sync.js';

/** How many relations a start-up message names at most. */
const NAMED_AT_MOST = 10;

/**
 * Checks the login `client` is connected as (the database's `admin_url`, else `url`) for
 * `roles: managed` (issue 17 "Configuration"): it needs CREATEROLE (or superuser), and on every
 * relation outside the system schemas and `pgwarden` either ownership or the grant option of
 * SELECT, INSERT, UPDATE, DELETE (USAGE for a sequence), and USAGE with grant option on their
 * schemas. Output: undefined when it may, else one message saying exactly which privilege is
 * missing where, and naming `roles: single` as the way out. Rejects with pg's error.
 */
export async function checkAdministrationLogin(
  client: pg.ClientBase,
  unmanaged: (schema: string) => boolean,
): Promise<string | undefined> {
  const me = await client.query<{ user: string; createrole: boolean; superuser: boolean }>(
    `SELECT current_user AS user, rolcreaterole AS createrole, rolsuper AS superuser
       FROM pg_roles WHERE rolname = current_user`,
  );
  const row = me.rows[0];
  const way = 'or set roles: single for this database (every session then logs in as the url login)';
  if (!row) return 'the administration login has no pg_roles row';
  if (!row.createrole && !row.superuser)
    return `roles: managed needs an administration login with CREATEROLE, and "${row.user}" lacks CREATEROLE: run ALTER ROLE ${row.user} CREATEROLE as a superuser, give the database an admin_url whose login has it, ${way}`;
  const { relations, schemas } = await readUngrantable(client, unmanaged);
  if (relations.size === 0 && schemas.size === 0) return undefined;
  const named = [
    ...[...schemas].map((s) => `schema ${s} (USAGE)`),
    ...[...relations.values()].map((r) => `${r.schema}.${r.name} (${r.missing.join(', ')})`),
  ];
  const shown = named.slice(0, NAMED_AT_MOST).join(', ');
  const more = named.length > NAMED_AT_MOST ? ` and ${named.length - NAMED_AT_MOST} more` : '';
  return `roles: managed needs the administration login "${row.user}" to own the tables or hold their grant option; it can grant neither on ${shown}${more}: make it the owner (ALTER TABLE … OWNER TO ${row.user}), grant it the privileges WITH GRANT OPTION, ${way}`;
}

// The functions a statement may call without MANAGE (DESIGN.md "Side channels": functions that read what no column reference shows).

import type { Catalog } from '../catalog/types.js';
import type { FunctionCall } from './analysis-types.js';

/**
 * Stable or immutable pg_catalog functions that are nevertheless refused: they run SQL text, read a
 * whole relation by name or OID, or show other sessions or server files.
 * - `*_to_xml*` of a query, cursor, table, schema or database read rows no column reference shows;
 * - pg_stat_get_activity, pg_stat_get_backend_* and pg_stat_get_progress_info show other
 *   sessions' query text (holding their literal values) and clients; per-object counters
 *   (pg_stat_get_numscans, … — DBeaver lists them beside indexes) stay allowed;
 * - pg_mcv_list_items decodes most-common values (samples of column values);
 * - replication, subscription and server-configuration readers.
 * Volatile functions are refused unless listed in {@link ALLOWED_VOLATILE_FUNCTIONS}, which covers
 * query_to_xml, cursor_to_xml, ts_stat, ts_rewrite, pg_read_file, pg_read_binary_file, pg_ls_*dir,
 * pg_stat_file, lo_*, pg_notify, pg_sleep*, setval, pg_terminate_backend, … by default.
 */
const DENIED_STABLE_FUNCTIONS: ReadonlySet<string> = new Set([
  'database_to_xml',
  'database_to_xml_and_xmlschema',
  'database_to_xmlschema',
  'schema_to_xml',
  'schema_to_xml_and_xmlschema',
  'schema_to_xmlschema',
  'table_to_xml',
  'table_to_xml_and_xmlschema',
  'table_to_xmlschema',
  'pg_mcv_list_items',
  'pg_config',
  'pg_get_replication_slots',
  'pg_get_backend_memory_contexts',
  'pg_show_all_file_settings',
  'pg_stat_get_activity',
  'pg_stat_get_progress_info',
  'pg_stat_get_wal_receiver',
  'pg_stat_get_wal_senders',
  'pg_stat_get_subscription',
  'pg_stat_get_replication_slot',
]);

/** Prefixes of refused stable pg_catalog functions (see {@link DENIED_STABLE_FUNCTIONS}). */
const DENIED_PREFIXES: readonly string[] = ['pg_stat_get_backend_'];

/**
 * Volatile pg_catalog functions allowed without MANAGE: they read no relation, file or SQL text.
 * random/setseed, clock_timestamp/timeofday, gen_random_uuid, sequence functions the session
 * itself drives (nextval, currval, lastval), advisory locks (a lock keyed on a hidden value is a
 * `compute` use of it and refused there), relation and database sizes (psql's `\dt+`, `\l+`), and
 * partition trees (psql's `\d+`), and recovery state drivers ask for. pg_sleep, pg_notify and set_config are decided elsewhere
 * (pg_sleep and pg_notify need MANAGE; set_config: {@link SET_CONFIG}).
 */
export const ALLOWED_VOLATILE_FUNCTIONS: ReadonlySet<string> = new Set([
  'random',
  'setseed',
  'clock_timestamp',
  'timeofday',
  'gen_random_uuid',
  'nextval',
  'currval',
  'lastval',
  'pg_advisory_lock',
  'pg_advisory_lock_shared',
  'pg_advisory_unlock',
  'pg_advisory_unlock_all',
  'pg_advisory_unlock_shared',
  'pg_advisory_xact_lock',
  'pg_advisory_xact_lock_shared',
  'pg_try_advisory_lock',
  'pg_try_advisory_lock_shared',
  'pg_try_advisory_xact_lock',
  'pg_try_advisory_xact_lock_shared',
  'pg_relation_size',
  'pg_table_size',
  'pg_total_relation_size',
  'pg_indexes_size',
  'pg_database_size',
  'pg_tablespace_size',
  'pg_is_in_recovery',
  'pg_partition_ancestors',
  'pg_partition_tree',
  'pg_jit_available',
  'pg_stat_clear_snapshot',
]);

/** set_config: allowed only for listed settings, decided with its literal arguments (set-config.ts). */
export const SET_CONFIG = 'set_config';

/** The outcome of checking one called function. */
export type FunctionVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string }
  /** pg_catalog.set_config: the caller decides from its arguments. */
  | { readonly allowed: 'set_config' };

/**
 * Whether calling `call` needs MANAGE. Input: a function the query analysis resolved, and the
 * catalog it resolved against (for volatility). Output: allowed, set_config (decided by its
 * arguments), or refused with the requirement reason `function schema.name`. Rules (DESIGN.md
 * "Side channels"): user-defined functions (any schema but pg_catalog, and information_schema's
 * own `_pg_*` helpers) need MANAGE; pg_catalog immutable/stable functions are allowed unless they
 * read SQL text, relations or server state ({@link DENIED_STABLE_FUNCTIONS}); volatile ones only
 * when listed ({@link ALLOWED_VOLATILE_FUNCTIONS}). A function missing from the catalog counts as
 * volatile.
 */
export function checkFunction(call: FunctionCall, catalog: Catalog): FunctionVerdict {
  const reason = `function ${call.schema}.${call.name}`;
  if (call.schema === 'information_schema' && call.name.startsWith('_pg_')) return { allowed: true };
  if (call.schema !== 'pg_catalog') return { allowed: false, reason };
  if (call.name === SET_CONFIG) return { allowed: 'set_config' };
  const entry = catalog.functions.get(`${call.schema}.${call.name}`)?.find((f) => f.oid === call.oid);
  const volatility = entry?.volatility ?? 'volatile';
  if (volatility === 'volatile') {
    return ALLOWED_VOLATILE_FUNCTIONS.has(call.name) ? { allowed: true } : { allowed: false, reason };
  }
  if (DENIED_STABLE_FUNCTIONS.has(call.name) || DENIED_PREFIXES.some((p) => call.name.startsWith(p))) {
    return { allowed: false, reason };
  }
  return { allowed: true };
}

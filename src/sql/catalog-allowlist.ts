// The catalog relations (pg_catalog, information_schema) a statement may read without MANAGE.

/** Schemas whose relations are the system catalog: governed by this allowlist, not by table rules. */
export const CATALOG_SCHEMAS: ReadonlySet<string> = new Set(['pg_catalog', 'information_schema']);

/**
 * pg_catalog relations psql, drivers (pgjdbc, node-postgres, psycopg), ORMs and tools (DBeaver,
 * pg_dump, drizzle-kit, sequelize) read to describe a database: definitions, names, types,
 * ownership, privileges and activity counters, never row values or other sessions' queries.
 * PostgreSQL grants SELECT on each of them to PUBLIC. Deliberately absent, so MANAGE: pg_authid
 * and pg_shadow (password hashes), pg_statistic, pg_stats, pg_stats_ext, pg_stats_ext_exprs,
 * pg_statistic_ext_data (most-common values and histograms are samples of column values: Postgres
 * filters pg_stats to columns the login may SELECT, which under `roles: single` is every column,
 * whatever SEE says), pg_largeobject (large-object contents), pg_user_mapping and
 * pg_user_mappings (connection options with passwords), pg_stat_activity and the other
 * pg_stat_* views of sessions, replication, WAL and archiving, SSL, GSS, progress, SLRU and I/O
 * (other sessions' query text and addresses, WAL file names), pg_file_settings, pg_hba_file_rules, pg_ident_file_mappings,
 * pg_config (server files), pg_locks, pg_prepared_xacts, replication slots and origins, memory
 * contexts and shared memory. Some allowed relations have columns that need MANAGE
 * ({@link catalogColumnDenial}).
 */
export const ALLOWED_PG_CATALOG_RELATIONS: ReadonlySet<string> = new Set([
  // tables
  'pg_aggregate',
  'pg_am',
  'pg_amop',
  'pg_amproc',
  'pg_attrdef',
  'pg_attribute',
  'pg_auth_members',
  'pg_cast',
  'pg_class',
  'pg_collation',
  'pg_constraint',
  'pg_conversion',
  'pg_database',
  'pg_default_acl',
  'pg_depend',
  'pg_description',
  'pg_enum',
  'pg_event_trigger',
  'pg_extension',
  'pg_foreign_data_wrapper',
  'pg_foreign_server',
  'pg_foreign_table',
  'pg_index',
  'pg_inherits',
  'pg_init_privs',
  'pg_language',
  'pg_largeobject_metadata',
  'pg_namespace',
  'pg_opclass',
  'pg_operator',
  'pg_opfamily',
  'pg_parameter_acl',
  'pg_partitioned_table',
  'pg_policy',
  'pg_proc',
  'pg_publication',
  'pg_publication_namespace',
  'pg_publication_rel',
  'pg_range',
  'pg_rewrite',
  'pg_seclabel',
  'pg_sequence',
  'pg_shdepend',
  'pg_shdescription',
  'pg_shseclabel',
  'pg_statistic_ext',
  'pg_subscription',
  'pg_subscription_rel',
  'pg_db_role_setting',
  'pg_tablespace',
  'pg_transform',
  'pg_trigger',
  'pg_ts_config',
  'pg_ts_config_map',
  'pg_ts_dict',
  'pg_ts_parser',
  'pg_ts_template',
  'pg_type',
  // views
  'pg_available_extension_versions',
  'pg_available_extensions',
  'pg_cursors',
  'pg_group',
  'pg_indexes',
  'pg_matviews',
  'pg_policies',
  'pg_prepared_statements',
  'pg_publication_tables',
  'pg_roles',
  'pg_rules',
  'pg_seclabels',
  'pg_sequences',
  'pg_settings',
  // activity counters of relations and functions (numbers of scans, tuples, blocks, calls)
  ...['all', 'sys', 'user'].flatMap((w) => [
    `pg_stat_${w}_tables`,
    `pg_stat_xact_${w}_tables`,
    `pg_stat_${w}_indexes`,
    `pg_statio_${w}_tables`,
    `pg_statio_${w}_indexes`,
    `pg_statio_${w}_sequences`,
  ]),
  'pg_stat_user_functions',
  'pg_stat_xact_user_functions',
  // counters of each database and of the background writer (transactions, blocks, conflicts, checkpoints)
  'pg_stat_database',
  'pg_stat_database_conflicts',
  'pg_stat_bgwriter',
  'pg_tables',
  'pg_timezone_abbrevs',
  'pg_timezone_names',
  'pg_user',
  'pg_views',
]);

/**
 * Columns of allowed catalog relations that need MANAGE: pg_subscription.subconninfo (the
 * publisher's connection string, password included; Postgres grants SELECT on every column of
 * pg_subscription to PUBLIC but that one), and pg_sequences.last_value (a sequence's current
 * value: Postgres shows it to a login with SELECT or USAGE on the sequence, which under
 * `roles: single` is every sequence, whatever the rules say about it).
 */
const DENIED_CATALOG_COLUMNS: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['pg_catalog.pg_subscription', new Set(['subconninfo'])],
  ['pg_catalog.pg_sequences', new Set(['last_value'])],
]);

/**
 * Whether reading column `column` of catalog relation `schema.name` (an allowed one) needs MANAGE
 * beyond the relation itself. Output: null when not, else the requirement reason
 * (`catalog column pg_catalog.pg_subscription.subconninfo`). Source: PostgreSQL 15
 * system_views.sql / system_functions.sql grants; DESIGN.md "Side channels".
 */
export function catalogColumnDenial(schema: string, name: string, column: string): string | null {
  return DENIED_CATALOG_COLUMNS.get(`${schema}.${name}`)?.has(column)
    ? `catalog column ${schema}.${name}.${column}`
    : null;
}

/** information_schema views that expose user mappings' options (passwords): MANAGE. */
const DENIED_INFORMATION_SCHEMA: ReadonlySet<string> = new Set([
  'user_mapping_options',
  'user_mappings',
  '_pg_user_mappings',
]);

/**
 * Whether reading catalog relation `schema.name` needs MANAGE. Input: a relation in
 * {@link CATALOG_SCHEMAS}, by exact names. Output: null when allowed, else the requirement reason
 * (`catalog relation pg_catalog.pg_stats`). information_schema views are built over the allowed
 * pg_catalog tables with the privilege filters of the SQL standard, so all are allowed except the
 * user-mapping ones. Source: DESIGN.md "Side channels".
 */
export function catalogRelationDenial(schema: string, name: string): string | null {
  if (schema === 'pg_catalog' && ALLOWED_PG_CATALOG_RELATIONS.has(name)) return null;
  if (schema === 'information_schema' && !DENIED_INFORMATION_SCHEMA.has(name)) return null;
  return `catalog relation ${schema}.${name}`;
}

/**
 * The schema pgwarden keeps for itself in an upstream database: the policy store's tables and
 * `role_set_logins`, which holds the set logins' passwords (roles/bookkeeping.ts,
 * policy/policy-migrations.ts).
 */
export const PGWARDEN_SCHEMA = 'pgwarden';

/**
 * Whether a reference to a relation (or a column of one) in schema `schema` needs MANAGE whatever
 * the table rules say (a rule on `*` matches schema `pgwarden` too). Output: null when not, else the
 * requirement reason naming the schema.
 */
export function ownSchemaDenial(schema: string): string | null {
  return schema === PGWARDEN_SCHEMA
    ? `schema ${PGWARDEN_SCHEMA} (pgwarden's own tables: the policy store and the set logins' passwords)`
    : null;
}

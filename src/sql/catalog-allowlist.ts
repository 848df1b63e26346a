// The catalog relations (pg_catalog, information_schema) a statement may read without MANAGE.

/** Schemas whose relations are the system catalog: governed by this allowlist, not by table rules. */
export const CATALOG_SCHEMAS: ReadonlySet<string> = new Set(['pg_catalog', 'information_schema']);

/**
 * pg_catalog relations psql, drivers (pgjdbc, node-postgres, psycopg) and tools (DBeaver, pg_dump)
 * read to describe a database: definitions, names, types, ownership and privileges, never row
 * values or other sessions' activity. Deliberately absent, so MANAGE: pg_authid and pg_shadow
 * (password hashes), pg_statistic, pg_stats, pg_stats_ext, pg_stats_ext_exprs,
 * pg_statistic_ext_data (most-common values and histograms are samples of column values),
 * pg_largeobject (large-object contents), pg_user_mapping, pg_user_mappings and pg_subscription
 * (connection strings with passwords), pg_db_role_setting (per-role settings), pg_sequences
 * (sequence values), pg_stat_* and pg_statio_* (other sessions' queries and counters),
 * pg_file_settings, pg_hba_file_rules, pg_ident_file_mappings, pg_config (server files), pg_locks,
 * pg_prepared_xacts, replication slots and origins, memory contexts and shared memory.
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
  'pg_settings',
  'pg_tables',
  'pg_timezone_abbrevs',
  'pg_timezone_names',
  'pg_user',
  'pg_views',
]);

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

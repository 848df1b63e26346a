// Which run-time settings a caller may change without MANAGE, and the two that must keep their value.

import type { AnalysisRefusal } from './analysis-types.js';

/**
 * Settings a caller may SET, SET LOCAL or `set_config` without MANAGE. Each only changes how this
 * session presents values, waits, or starts transactions; none changes what the statement text
 * means to the parser, what a statement may read, or who the session is. Names are lower case
 * (Postgres matches GUC names case-insensitively).
 * - presentation: application_name, DateStyle, IntervalStyle, TimeZone, extra_float_digits,
 *   bytea_output, client_min_messages, lc_monetary, lc_numeric, lc_time, xmlbinary, xmloption,
 *   quote_all_identifiers, default_text_search_config;
 * - waiting: statement_timeout, lock_timeout, idle_in_transaction_session_timeout, idle_session_timeout;
 * - transactions: default_transaction_isolation / _read_only / _deferrable, transaction_isolation /
 *   _read_only / _deferrable, synchronous_commit;
 * - defaults dump scripts set before DDL (the DDL itself needs MANAGE): check_function_bodies,
 *   default_tablespace, default_table_access_method, default_toast_compression, row_security
 *   (off only makes queries on RLS tables fail);
 * - restrict_nonsystem_relation_kind (pg_dump 15.8+ sets it to `view, foreign-table`): it only
 *   narrows what the session may read (views, foreign tables) by making such statements fail;
 *   it reveals nothing and widens nothing, and pgwarden's own catalog reads use their own connection;
 * - search_path, tracked by the analysis (SessionEffect `set-search-path`).
 * Everything else (role, session_authorization, work_mem, custom `x.y` settings, …) needs MANAGE.
 * client_encoding and standard_conforming_strings are handled by {@link checkTextSetting}.
 */
export const HARMLESS_SETTINGS: ReadonlySet<string> = new Set([
  'application_name',
  'datestyle',
  'intervalstyle',
  'timezone',
  'extra_float_digits',
  'bytea_output',
  'client_min_messages',
  'lc_monetary',
  'lc_numeric',
  'lc_time',
  'xmlbinary',
  'xmloption',
  'quote_all_identifiers',
  'default_text_search_config',
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'idle_session_timeout',
  'default_transaction_isolation',
  'default_transaction_read_only',
  'default_transaction_deferrable',
  'transaction_isolation',
  'transaction_read_only',
  'transaction_deferrable',
  'synchronous_commit',
  'check_function_bodies',
  'default_tablespace',
  'default_table_access_method',
  'default_toast_compression',
  'row_security',
  'restrict_nonsystem_relation_kind',
  'search_path',
]);

/**
 * The settings that change how the server reads statement text. pgwarden parses with
 * client_encoding UTF8 and standard_conforming_strings on; a session that changed either would
 * have the server read `'\'' …` or non-UTF-8 bytes differently from the analysis.
 */
export const TEXT_SETTINGS: ReadonlySet<string> = new Set(['client_encoding', 'standard_conforming_strings']);

/** VAR_SET_MULTI forms of SET (`SET TRANSACTION …`, `SET SESSION CHARACTERISTICS AS TRANSACTION …`). */
export const HARMLESS_MULTI_SETS: ReadonlySet<string> = new Set([
  'TRANSACTION',
  'SESSION CHARACTERISTICS',
  'TRANSACTION SNAPSHOT',
]);

/** Postgres's clean_encoding_name: lower case, non-alphanumerics dropped. */
function cleanEncodingName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/**
 * Postgres's parse_bool: true for a prefix of `true` or `yes`, `on`, `1` (case-insensitive);
 * false for a prefix of `false` or `no`, `off`/`of`, `0`; null otherwise.
 */
export function parsePgBool(value: string): boolean | null {
  const v = value.toLowerCase();
  if (v === '') return null;
  if ('true'.startsWith(v) || 'yes'.startsWith(v) || v === 'on' || v === '1') return true;
  if ('false'.startsWith(v) || 'no'.startsWith(v) || v === 'off' || v === 'of' || v === '0') return false;
  return null;
}

/**
 * Checks a new value of client_encoding or standard_conforming_strings. Input: the lower-case
 * setting name and the value as text (null for DEFAULT/RESET, which return to UTF8 — the only
 * startup value the proxy passes — and the server default `on`). Output: undefined when the value
 * keeps the text read the same way, else a refusal 0A000 saying why. Source: pg_char_to_encoding
 * (`UTF8`, `UTF-8`, `unicode` all name UTF8), parse_bool.
 */
export function checkTextSetting(name: string, value: string | null): AnalysisRefusal | undefined {
  if (value === null) return undefined;
  if (name === 'client_encoding') {
    const enc = cleanEncodingName(value);
    if (enc === 'utf8' || enc === 'unicode') return undefined;
    return {
      sqlstate: '0A000',
      message: `client_encoding cannot be changed to ${value}: pgwarden reads statements as UTF8, and the server would read them differently`,
    };
  }
  if (name === 'standard_conforming_strings') {
    if (parsePgBool(value) === true) return undefined;
    return {
      sqlstate: '0A000',
      message: `standard_conforming_strings cannot be turned off: pgwarden reads backslashes in string literals as standard SQL does, and the server would read them differently`,
    };
  }
  return undefined;
}

/**
 * `pgwarden.*` settings (pgwarden.identity, pgwarden.roles) are given to the upstream session at
 * startup as its reset values, for row-level security per viewer (issue 8); `pgwarden_catalog.*`
 * carry what changed between the statements of pgwarden's own catalog reads on its catalog
 * connection (catalog-changes.ts CHAIN).
 * No statement may change either, whatever the caller's permissions. Input: the lower-case setting name.
 */
export function isPgwardenSetting(setting: string): boolean {
  return setting.startsWith('pgwarden.') || setting.startsWith('pgwarden_catalog.');
}

/** The refusal message for a change of a `pgwarden.*` setting (42501). */
export const PGWARDEN_SETTING_MESSAGE = (setting: string): string =>
  `${setting} is set by pgwarden for this connection and cannot be changed`;

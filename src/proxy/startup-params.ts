// Filters a client's StartupMessage parameters down to the listed ones that may reach the upstream.

/** A startup parameter that is refused, with the SQLSTATE of the FATAL error the client gets. */
export class StartupParamError extends Error {
  readonly sqlstate: string;
  constructor(sqlstate: string, message: string) {
    super(message);
    this.sqlstate = sqlstate;
  }
}

/** What a StartupMessage asks for, once filtered. */
export interface FilteredStartup {
  readonly user: string;
  /** The client-facing database name (defaults to the user name, as in PostgreSQL). */
  readonly database: string;
  /** Parameters to send upstream (never user/database: the config's credentials replace them). */
  readonly upstream: Map<string, string>;
  /** `-c pgwarden.role=…` and `-c pgwarden.viewer=…`, consumed here, never forwarded. */
  readonly pgwarden: { readonly role?: string; readonly viewer?: string };
  /** The search_path the session starts with, when the client set one. */
  readonly searchPath?: string;
}

/**
 * Settings a client may set at startup, directly or as `-c` in `options` (DESIGN.md "Startup").
 * Each one changes formatting only, never how the server reads SQL text; or, as
 * `default_transaction_read_only`, only narrows what the session may do (pgwarden mcp's read tools
 * log in with it on).
 */
const SETTINGS = new Set([
  'application_name',
  'datestyle',
  'timezone',
  'extra_float_digits',
  'intervalstyle',
  'search_path',
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'bytea_output',
  'client_min_messages',
  'default_transaction_read_only',
]);

/** Canonical spellings PostgreSQL reports in ParameterStatus, so the upstream sees the usual names. */
const CANONICAL: Record<string, string> = {
  datestyle: 'DateStyle',
  timezone: 'TimeZone',
  intervalstyle: 'IntervalStyle',
};

/** Client encodings that read SQL text byte for byte as UTF-8 does; the upstream always gets UTF8. */
const UTF8_COMPATIBLE = new Set(['utf8', 'utf-8', 'unicode', 'sql_ascii']);

/**
 * Splits a libpq `options` value the way the server's pg_split_opts does: on unescaped
 * whitespace, a backslash taking the next character literally.
 */
export function splitOptions(options: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < options.length; i++) {
    const ch = options[i] as string;
    if (ch === '\\' && i + 1 < options.length) {
      cur += options[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) out.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (inWord) out.push(cur);
  return out;
}

/** `-c name=value`, `-cname=value`, `--name=value` → [name, value] pairs; anything else is refused. */
function parseOptions(options: string): [string, string][] {
  const words = splitOptions(options);
  const pairs: [string, string][] = [];
  for (let i = 0; i < words.length; i++) {
    const w = words[i] as string;
    let setting: string | undefined;
    if (w === '-c') setting = words[++i];
    else if (w.startsWith('-c')) setting = w.slice(2);
    else if (w.startsWith('--')) setting = w.slice(2);
    const eq = setting?.indexOf('=') ?? -1;
    if (setting === undefined || eq <= 0) {
      throw new StartupParamError('42501', `startup option "${w}" is not allowed through pgwarden`);
    }
    pairs.push([setting.slice(0, eq).replaceAll('-', '_'), setting.slice(eq + 1)]);
  }
  return pairs;
}

/**
 * Keeps the listed startup parameters and refuses the rest (DESIGN.md "Startup": only listed
 * parameters pass; `replication` is refused). `client_encoding` must be UTF-8-compatible and is
 * sent as UTF8; `pgwarden.role` / `pgwarden.viewer` are taken out for pgwarden itself.
 * Throws {@link StartupParamError}: 08P01 without `user`, 0A000 for replication, 22023 for an
 * encoding other than UTF8, 42501 for a parameter or option not on the list.
 */
export function filterStartupParams(params: ReadonlyMap<string, string>): FilteredStartup {
  const user = params.get('user');
  if (!user) throw new StartupParamError('28000', 'no PostgreSQL user name specified in startup packet');
  const database = params.get('database') || user;
  const upstream = new Map<string, string>([['client_encoding', 'UTF8']]);
  const pgwarden: { role?: string; viewer?: string } = {};

  const setOne = (rawName: string, value: string) => {
    const name = rawName.toLowerCase();
    if (name === 'pgwarden.role') pgwarden.role = value;
    else if (name === 'pgwarden.viewer') pgwarden.viewer = value;
    else if (name === 'client_encoding') {
      if (!UTF8_COMPATIBLE.has(value.toLowerCase())) {
        throw new StartupParamError(
          '22023',
          `client_encoding "${value}" is not supported: pgwarden reads SQL as UTF8`,
        );
      }
    } else if (name === 'standard_conforming_strings') {
      if (value.toLowerCase() !== 'on') {
        throw new StartupParamError('22023', 'standard_conforming_strings must stay on through pgwarden');
      }
    } else if (SETTINGS.has(name)) upstream.set(CANONICAL[name] ?? name, value);
    else
      throw new StartupParamError('42501', `startup parameter "${rawName}" is not allowed through pgwarden`);
  };

  for (const [name, value] of params) {
    if (name === 'user' || name === 'database') continue;
    if (name === 'replication')
      throw new StartupParamError('0A000', 'replication connections are not supported by pgwarden');
    if (name === 'options') for (const [k, v] of parseOptions(value)) setOne(k, v);
    // libpq's fallback_application_name: sent only when application_name is not.
    else if (name === 'fallback_application_name') {
      if (!params.has('application_name')) upstream.set('application_name', value);
    } else setOne(name, value);
  }
  const searchPath = upstream.get('search_path');
  return searchPath === undefined
    ? { user, database, upstream, pgwarden }
    : { user, database, upstream, pgwarden, searchPath };
}

/**
 * The application_name as PostgreSQL 15 keeps it (guc.c check_application_name, pg_clean_ascii):
 * every byte outside printable ASCII (32–126) becomes `?`, so a UTF-8 character becomes one `?`
 * per byte. What pgwarden shows of a session (SHOW CLIENTS and SHOW SERVERS of the admin console,
 * its logs) is what pg_stat_activity and `SHOW application_name` show: a client cannot put
 * terminal escape sequences in front of an operator reading it in psql. Input: the value sent at
 * startup. Output: the cleaned value. Errors: none.
 */
export function cleanApplicationName(value: string): string {
  let out = '';
  for (const b of Buffer.from(value, 'utf8')) out += b >= 32 && b <= 126 ? String.fromCharCode(b) : '?';
  return out;
}

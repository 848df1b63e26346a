// `pgwarden check`: resolve the user's roles, read the catalog, analyze and decide a SQL string, and report.
import type { Catalog } from '../catalog/types.js';
import { analyze, loadParser } from '../sql/analyze.js';
import { majorOfServerVersion } from '../sql/parser.js';
import { type CheckReport, checkExitCode, checkJson, renderCheckText } from './check-report.js';
import { ConfigError } from './config-load.js';
import { checkDatabaseAccess } from './database-access.js';
import { decide } from './decide.js';
import { loadConfigWithPolicy } from './policy-load.js';
import { PolicyStoreUnavailableError } from './policy-store.js';
import { findPrincipal } from './principals.js';
import { resolveRoles } from './resolve-roles.js';

/** The command line of `pgwarden check`. */
export interface CheckOptions {
  readonly config: string;
  readonly user: string;
  readonly role?: string;
  readonly database?: string;
  readonly json?: boolean;
  /** ANSI colour in the text output (the CLI: stdout is a terminal and NO_COLOR is unset). */
  readonly colour?: boolean;
  readonly sql: string;
}

/** What `check` needs from outside policy/: reading a catalog over the network (the CLI wires it). */
export interface CheckDeps {
  /** Reads the Catalog of `database` with the config's upstream `url`; rejects when it cannot. */
  loadCatalog(database: string, url: string): Promise<Catalog>;
  /** ms since the epoch, for key expiry; default Date.now(). */
  readonly now?: number;
}

/** What the CLI prints and the code it exits with: 0 allowed, 1 refused, 2 usage or config error. */
export interface CheckOutcome {
  readonly exitCode: 0 | 1 | 2;
  readonly stdout: string;
  readonly stderr: string;
}

function usage(message: string): CheckOutcome {
  return { exitCode: 2, stdout: '', stderr: `pgwarden check: ${message}\n` };
}

/**
 * Runs `pgwarden check` (issue 4): loads the config (with its keys file), finds `user` (a user or an
 * active API key id), resolves its roles as a connection naming `role` (or none) would, checks access
 * to the database for the config's `mode`, reads the upstream catalog, analyzes the SQL with the
 * upstream login's search_path, decides, and renders the report (text, or JSON with `json`).
 * Exit codes: 0 allowed (masks or not), 1 refused (at connect — 28000, 42501 — or any statement),
 * 2 for a usage or config error: an invalid config, an unknown user, a database that is not
 * configured or not chosen, an upstream that cannot be read, a server major without a parser.
 * Never throws for those; other errors propagate.
 */
export async function runCheck(opts: CheckOptions, deps: CheckDeps): Promise<CheckOutcome> {
  let config: CheckReport['config'];
  try {
    config = (await loadConfigWithPolicy(opts.config)).config;
  } catch (e) {
    if (e instanceof ConfigError) return { exitCode: 2, stdout: '', stderr: `${e.message}\n` };
    if (e instanceof PolicyStoreUnavailableError)
      return { exitCode: 2, stdout: '', stderr: `pgwarden check: ${e.message}\n` };
    throw e;
  }
  const report = await checkReport(config, opts, deps);
  if ('usage' in report) return usage(report.usage);
  return {
    exitCode: checkExitCode(report),
    stdout: opts.json
      ? `${JSON.stringify(checkJson(report), null, 2)}\n`
      : renderCheckText(report, opts.colour ?? false),
    stderr: '',
  };
}

/**
 * The report of `check` for a config already loaded (the CLI's file, or the admin API's policy in
 * force): the same steps as {@link runCheck}. Output: the report, or `{ usage }` with the message of a
 * usage error (unknown user or database, an upstream that cannot be read, a server major without a parser).
 */
export async function checkReport(
  config: CheckReport['config'],
  opts: Omit<CheckOptions, 'config' | 'json' | 'colour'>,
  deps: CheckDeps,
): Promise<CheckReport | { usage: string }> {
  const usage = (m: string) => ({ usage: m });
  const names = Object.keys(config.databases);
  const database = opts.database ?? (names.length === 1 ? names[0] : undefined);
  if (database === undefined) return usage(`--database is required: the config has ${names.join(', ')}`);
  const db = Object.hasOwn(config.databases, database) ? config.databases[database] : undefined;
  if (!db) return usage(`database "${database}" is not in the config (${names.join(', ')})`);
  const principal = findPrincipal(config, opts.user, deps.now ?? Date.now());
  if (!principal) return usage(`no user or active API key named "${opts.user}"`);

  const base = { config, user: opts.user, database, connection: config.mode, sql: opts.sql } as const;
  const render = (report: CheckReport): CheckReport => report;

  const resolution = resolveRoles(
    config,
    principal,
    opts.role !== undefined ? { requestedRole: opts.role } : {},
  );
  if (!resolution.ok) {
    return render({
      ...base,
      roles: [],
      connectRefusal: { sqlstate: resolution.sqlstate, message: resolution.message },
    });
  }
  const roles = resolution.roles;
  const access = checkDatabaseAccess(config, roles, database, config.mode);
  if (!access.ok) {
    return render({
      ...base,
      roles,
      connectRefusal: {
        sqlstate: access.sqlstate,
        message: access.message,
        ...(access.detail ? { detail: access.detail } : {}),
      },
    });
  }

  const upstream = upstreamAddress(db.url);
  let catalog: Catalog;
  try {
    catalog = await deps.loadCatalog(database, db.url);
  } catch (e) {
    return usage(
      `cannot read the catalog of database "${database}" upstream at ${upstream}: ${(e as Error).message}`,
    );
  }
  try {
    await loadParser(majorOfServerVersion(catalog.serverVersionNum));
  } catch (e) {
    return usage((e as Error).message);
  }
  const analysis = analyze(opts.sql, { catalog, searchPath: catalog.defaultSearchPath });
  const decision = decide(analysis, roles, { config, connection: config.mode, database, catalog });
  return render({ ...base, upstream, roles, analysis, decision });
}

/**
 * `host:port/database` of a postgres:// URL, as `check` names the upstream it reads: the port
 * 5432 and the user name as database when the URL leaves them out (libpq's defaults); never the
 * credentials. A URL that does not parse is shown as `(unparsable url)`.
 */
export function upstreamAddress(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return '(unparsable url)';
  }
  const database = decodeURIComponent(u.pathname.replace(/^\//, '')) || decodeURIComponent(u.username);
  return `${u.hostname || 'localhost'}:${u.port || '5432'}/${database}`;
}

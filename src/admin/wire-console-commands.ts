// The wire admin console's commands (SHOW CLIENTS/SERVERS/STATS/POLICY/VERSION/HELP, RELOAD, KILL, SHUTDOWN) and their result sets.
import { createRequire } from 'node:module';
import type { Config } from '../policy/config-schema.js';
import { type Editor, editorHolds } from '../policy/grant-limits.js';
import type { AppAction } from '../policy/policy-schema.js';
import type { ClientInfo, ConsoleHost, ServerInfo } from '../proxy/console-port.js';
import { commandComplete, dataRow, emptyQueryResponse, rowDescription } from '../wire/backend-encode.js';
import { type ErrorFields, errorResponse, noticeResponse } from '../wire/error-fields.js';

/** Column types of the console's result sets (pg_type OIDs and typlen). */
const TYPES = {
  text: { oid: 25, size: -1 },
  int8: { oid: 20, size: 8 },
  timestamptz: { oid: 1184, size: 8 },
} as const;
type Type = keyof typeof TYPES;
type Cell = string | number | null | undefined;

/** The lines of SHOW HELP's NOTICE DETAIL (PgBouncer sends its usage the same way). */
const HELP = [
  'SHOW HELP|CLIENTS|SERVERS|STATS|POLICY|VERSION',
  'RELOAD',
  'KILL <client id>',
  'SHUTDOWN',
  'SHOW needs the app-level action audit_read (SHOW HELP needs none); RELOAD, KILL and SHUTDOWN need workspace_settings.',
  'Under serve --workers N, SHOW CLIENTS, SERVERS and STATS and KILL cover the worker this connection landed on (/metrics of the admin API covers all); RELOAD and SHUTDOWN act on every worker.',
];

const pkg = createRequire(import.meta.url)('../../package.json') as { version: string };

/** Text of a time (ms since the epoch) as timestamptz prints it under TimeZone UTC. */
function timestamptz(ms: number | undefined): string | null {
  if (ms === undefined || ms === 0) return null;
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}+00`;
}

/** One column of a result set: its name, its type, and its cell for each item shown. */
type Column<T> = readonly [name: string, type: Type, cell: (item: T) => Cell];

/** A result set of one row per item: RowDescription, DataRows (text format), CommandComplete `SHOW`. */
function table<T>(columns: readonly Column<T>[], items: readonly T[]): Buffer[] {
  const out = [
    rowDescription(
      columns.map(([name, type]) => ({
        name,
        tableOid: 0,
        columnAttnum: 0,
        typeOid: TYPES[type].oid,
        typeSize: TYPES[type].size,
        typeModifier: -1,
        format: 0,
      })),
    ),
  ];
  for (const item of items)
    out.push(
      dataRow(
        columns.map(([, , cell]) => {
          const v = cell(item);
          return v === null || v === undefined ? null : Buffer.from(String(v));
        }),
      ),
    );
  out.push(commandComplete('SHOW'));
  return out;
}

function error(code: string, message: string, extra: Partial<ErrorFields> = {}): Buffer[] {
  return [errorResponse({ severity: 'ERROR', code, message, ...extra })];
}

/** One end of a connection as SHOW CLIENTS (the client's) and SHOW SERVERS (the upstream's) show it. */
type Endpoint = Pick<ServerInfo, 'user' | 'addr' | 'port' | 'localAddr' | 'localPort' | 'connectTime'>;
/** A client with its upstream session (SHOW SERVERS' rows). */
type WithServer = ClientInfo & { readonly server: ServerInfo };

/** The columns PgBouncer's SHOW CLIENTS and SHOW SERVERS share after `type`: `user` to `request_time`, of the end `side` picks. */
function connectionColumns<T extends ClientInfo>(
  side: (c: T) => Endpoint,
  state: (c: T) => string,
): Column<T>[] {
  return [
    ['user', 'text', (c) => side(c).user],
    ['database', 'text', (c) => c.database],
    ['state', 'text', state],
    ['addr', 'text', (c) => side(c).addr],
    ['port', 'int8', (c) => side(c).port],
    ['local_addr', 'text', (c) => side(c).localAddr],
    ['local_port', 'int8', (c) => side(c).localPort],
    ['connect_time', 'timestamptz', (c) => timestamptz(side(c).connectTime)],
    ['request_time', 'timestamptz', (c) => timestamptz(c.requestTime)],
  ];
}

/** PgBouncer's SHOW CLIENTS columns where the meaning is the same, then pgwarden's own (`roles`). */
const CLIENT_COLUMNS: readonly Column<ClientInfo>[] = [
  ['type', 'text', () => 'C'],
  ...connectionColumns(
    (c) => c,
    (c) => c.state,
  ),
  ['link', 'int8', (c) => (c.server ? c.id : null)],
  ['tls', 'text', (c) => c.tls],
  ['application_name', 'text', (c) => c.applicationName],
  ['id', 'int8', (c) => c.id],
  ['roles', 'text', (c) => c.roles.join(',')],
];

/** PgBouncer's SHOW SERVERS columns: one upstream session per client, `link` its client's id. */
const SERVER_COLUMNS: readonly Column<WithServer>[] = [
  ['type', 'text', () => 'S'],
  ...connectionColumns<WithServer>(
    (c) => c.server,
    (c) => (c.state === 'idle' ? 'idle' : 'active'),
  ),
  ['link', 'int8', (c) => c.id],
  ['remote_pid', 'int8', (c) => c.server.pid],
  ['tls', 'text', (c) => c.server.tls],
  ['application_name', 'text', (c) => c.applicationName],
  ['id', 'int8', (c) => c.id],
];

/** SHOW CLIENTS: every logged-in client. */
function showClients(clients: readonly ClientInfo[]): Buffer[] {
  return table(CLIENT_COLUMNS, clients);
}

/** SHOW SERVERS: the clients' upstream sessions (a console session has none). */
function showServers(clients: readonly ClientInfo[]): Buffer[] {
  return table(
    SERVER_COLUMNS,
    clients.filter((c): c is WithServer => c.server !== undefined),
  );
}

/** PgBouncer's SHOW STATS totals (since start) per database, plus pgwarden's total_refused_count. */
function showStats(host: ConsoleHost): Buffer[] {
  const totals = host.totals();
  const names = [...new Set([...Object.keys(host.config().config.databases), ...totals.keys()])].sort();
  return table<string>(
    [
      ['database', 'text', (db) => db],
      ['total_xact_count', 'int8', (db) => totals.get(db)?.transactions ?? 0],
      ['total_query_count', 'int8', (db) => totals.get(db)?.queries ?? 0],
      ['total_received', 'int8', (db) => totals.get(db)?.received ?? 0],
      ['total_sent', 'int8', (db) => totals.get(db)?.sent ?? 0],
      ['total_query_time', 'int8', (db) => totals.get(db)?.queryTimeUs ?? 0],
      ['total_refused_count', 'int8', (db) => totals.get(db)?.refused ?? 0],
    ],
    names,
  );
}

/** The policy in force: its epoch and what it holds. */
function showPolicy(host: ConsoleHost): Buffer[] {
  const c = host.config().config;
  return table<Config>(
    [
      ['epoch', 'text', () => host.epoch()],
      ['source', 'text', (p) => (p.policy_store !== undefined ? 'store' : 'file')],
      ['roles', 'int8', (p) => Object.keys(p.roles).length],
      ['users', 'int8', (p) => Object.keys(p.users).length],
      ['groups', 'int8', (p) => Object.keys(p.groups).length],
      ['api_keys', 'int8', (p) => p.api_keys.filter((k) => !k.revoked).length],
      ['databases', 'text', (p) => Object.keys(p.databases).sort().join(',')],
    ],
    [c],
  );
}

/** What a command needs and does; `args` are its words after the verb (upper-cased for matching). */
interface Parsed {
  readonly action: AppAction | undefined;
  readonly name: string;
  readonly run: () => Promise<Buffer[]> | Buffer[];
}

/** The SHOW items and what they answer. */
function showItem(item: string, host: ConsoleHost): Parsed['run'] | undefined {
  switch (item) {
    case 'CLIENTS':
      return () => showClients(host.clients());
    case 'SERVERS':
      return () => showServers(host.clients());
    case 'STATS':
      return () => showStats(host);
    case 'POLICY':
      return () => showPolicy(host);
    case 'VERSION':
      return () => table([['version', 'text', () => `pgwarden ${pkg.version}`]], [undefined]);
    default:
      return undefined;
  }
}

/**
 * Runs one console command (issue 21) for `caller` and returns the messages that answer it, before
 * ReadyForQuery: a result set, a NOTICE, a CommandComplete, or an ErrorResponse. Words are matched
 * without regard to case; one trailing `;` is allowed. Errors (the session goes on):
 * - 42601 syntax_error: not a console command, or a command with wrong arguments (POSITION at the word);
 * - 0A000 feature_not_supported: `SHOW` of an item the console does not have;
 * - 42501 insufficient_privilege: the caller lacks the app-level action, named in MESSAGE
 *   (`audit_read` for SHOW, `workspace_settings` for RELOAD, KILL and SHUTDOWN; seed 004, deny wins);
 * - 42704 undefined_object: KILL of an id no session has; 55000 object_not_in_prerequisite_state:
 *   RELOAD where the instance has no config file to read, or the file is invalid (its errors in DETAIL).
 * Every command run or refused for want of an action is an admin audit line.
 */
export async function runConsoleCommand(sql: string, host: ConsoleHost, caller: Editor): Promise<Buffer[]> {
  const text = sql.replace(/;\s*$/, '').trim();
  if (text === '') return [emptyQueryResponse()];
  const words = [...text.matchAll(/\S+/g)].map((m) => ({ word: m[0], at: (m.index ?? 0) + 1 }));
  const syntax = (w: { word: string; at: number } | undefined) =>
    error('42601', w ? `syntax error at or near "${w.word}"` : 'syntax error at end of input', {
      position: w ? w.at + (sql.length - sql.trimStart().length) : sql.length + 1,
      hint: 'The admin console runs one command per query; SHOW HELP lists them.',
    });
  const [verb, ...rest] = words;
  if (!verb) return [emptyQueryResponse()];
  let parsed: Parsed | undefined;
  switch (verb.word.toUpperCase()) {
    case 'SHOW': {
      const [item, extra] = rest;
      if (!item) return syntax(undefined);
      if (extra) return syntax(extra);
      const name = item.word.toUpperCase();
      if (name === 'HELP')
        return [
          noticeResponse({
            severity: 'NOTICE',
            code: '00000',
            message: 'Console usage',
            detail: HELP.join('\n'),
          }),
          commandComplete('SHOW'),
        ];
      const run = showItem(name, host);
      if (!run)
        return error('0A000', `SHOW ${item.word} is not a command of the admin console`, {
          hint: 'SHOW HELP lists the commands.',
        });
      parsed = { action: 'audit_read', name: `SHOW ${name}`, run };
      break;
    }
    case 'RELOAD':
      if (rest[0]) return syntax(rest[0]);
      parsed = {
        action: 'workspace_settings',
        name: 'RELOAD',
        run: async () => {
          const before = host.epoch();
          if (!host.reload) return error('55000', 'this instance has no configuration file to read again');
          try {
            await host.reload();
          } catch (e) {
            return error('55000', 'the configuration is invalid; the old one stays in force', {
              detail: (e as Error).message,
            });
          }
          host.audit({
            identity: caller.name,
            via: 'console',
            route: 'RELOAD',
            before_epoch: before,
            after_epoch: host.epoch(),
          });
          return [commandComplete('RELOAD')];
        },
      };
      break;
    case 'KILL': {
      const [id, extra] = rest;
      if (!id || !/^\d{1,15}$/.test(id.word)) return syntax(id);
      if (extra) return syntax(extra);
      parsed = {
        action: 'workspace_settings',
        name: 'KILL',
        run: () =>
          host.kill(Number(id.word))
            ? [commandComplete('KILL')]
            : error('42704', `no client with id ${id.word}`, { hint: 'SHOW CLIENTS lists the ids.' }),
      };
      break;
    }
    case 'SHUTDOWN':
      if (rest[0]) return syntax(rest[0]);
      parsed = {
        action: 'workspace_settings',
        name: 'SHUTDOWN',
        run: () => {
          // After this command's reply has been written: the shutdown closes this session too.
          setImmediate(() => host.shutdown());
          return [commandComplete('SHUTDOWN')];
        },
      };
      break;
    default:
      return syntax(verb);
  }
  const config = host.config().config;
  if (parsed.action && !editorHolds(config, caller, parsed.action)) {
    host.audit({
      identity: caller.name,
      via: 'console',
      route: parsed.name,
      status: 403,
      action: parsed.action,
    });
    return error('42501', `permission denied: ${parsed.name} needs the app-level action ${parsed.action}`, {
      detail: `Your roles: ${caller.roles.length > 0 ? caller.roles.join(', ') : 'none'}. No rule of them allows ${parsed.action}, or one denies it.`,
    });
  }
  const out = await parsed.run();
  if (parsed.name !== 'RELOAD' && parsed.action === 'workspace_settings')
    host.audit({ identity: caller.name, via: 'console', route: parsed.name, detail: text });
  return out;
}

// What pgwarden keeps per managed database: its roles, known set logins, sync state and administration connection, and the steps that change them.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Config } from '../policy/config-schema.js';
import { AdminConnection } from './admin-connection.js';
import type { SetLoginRow } from './bookkeeping.js';
import { applyGrants } from './grant-apply.js';
import type { SyncedGrants } from './grant-run.js';
import { readHeldPrivileges } from './grant-sync.js';
import { managedRoleName } from './role-names.js';
import { retireSetLogin, type SetMember } from './set-logins.js';
import { ensureWorkspaceRoles } from './workspace-roles.js';

/** Sessions cannot get a login now: FATAL with this SQLSTATE (57P03 cannot_connect_now, 08006, 28000). */
export class ManagedRolesError extends Error {
  constructor(
    readonly sqlstate: string,
    message: string,
  ) {
    super(message);
    this.name = 'ManagedRolesError';
  }
}

/** The upstream login a session uses: a set login's name and password. */
export interface SetLogin {
  readonly user: string;
  readonly password: string;
}

/** A set login this instance knows: its password, its roles, and when it last wrote `last_used_at` (ms). */
export interface KnownLogin {
  password: string;
  roles: readonly string[];
  touchedAt: number;
}

/** One managed database (client-facing name `name`) as this instance keeps it. */
export interface DatabaseState {
  readonly name: string;
  /** The database's role_prefix, '' when none (the bookkeeping rows' workspace). */
  readonly workspace: string;
  databaseOid: number;
  /** Config role name → pg_authid OID of its PostgreSQL role. */
  roleOids: Map<string, number>;
  readonly logins: Map<string, KnownLogin>;
  /** Open sessions per login on this instance (the sweep never drops one in use). */
  readonly inUse: Map<string, number>;
  /** Why the last sync failed; new sessions are refused while set. */
  failure: string | undefined;
  /** Every change to this database runs after the previous one (this instance). */
  chain: Promise<unknown>;
  /** The last reload's work (roles, retirements, sync): new sessions wait for it. */
  settled: Promise<void>;
  /**
   * The last successful sync: the policy version it was for, when the last full one ran, and what
   * a sync scoped to a catalog change starts from.
   */
  synced: { key: string; at: number; grants: SyncedGrants } | undefined;
  retry: NodeJS.Timeout | undefined;
  /** The administration connection, kept open between uses (issue 15: no connect per grant sync). */
  readonly admin: AdminConnection;
}

/** True when `database` is under `roles: managed` in `config`. */
export function isManaged(config: Config, database: string): boolean {
  return Object.hasOwn(config.databases, database) && config.databases[database]?.roles === 'managed';
}

/** A fresh state for database `name` whose administration login is `adminUrl`, with workspace `workspace`. */
export function newDatabaseState(name: string, workspace: string, adminUrl: string): DatabaseState {
  return {
    name,
    workspace,
    databaseOid: 0,
    roleOids: new Map(),
    logins: new Map(),
    inUse: new Map(),
    failure: undefined,
    chain: Promise.resolve(),
    settled: Promise.resolve(),
    synced: undefined,
    retry: undefined,
    admin: new AdminConnection(adminUrl),
  };
}

/** Runs `f` after every change to `state` queued before it (this instance); resolves or rejects as `f` does. */
export function serial<T>(state: DatabaseState, f: () => Promise<T>): Promise<T> {
  const run = state.chain.catch(() => {}).then(f);
  state.chain = run.catch(() => {});
  return run;
}

/** Makes every role of `config` a NOLOGIN PostgreSQL role (workspace-roles.ts). Output: config role name → OID. */
export async function ensureRoles(
  c: pg.ClientBase,
  state: DatabaseState,
  config: Config,
): Promise<Map<string, number>> {
  const names = Object.keys(config.roles);
  const pgNames = names.map((n) => managedRoleName(config.databases[state.name]?.role_prefix, n));
  const oids = await ensureWorkspaceRoles(c, pgNames);
  return new Map(names.map((n, i) => [n, oids.get(pgNames[i] as string) as number]));
}

/** A bookkeeping row whose roles are all still in `config`, with the same OIDs. */
export function rowIsCurrent(config: Config | undefined, state: DatabaseState, row: SetLoginRow): boolean {
  return (
    row.roles.length > 0 &&
    row.roles.every(
      (r, i) => Object.hasOwn(config?.roles ?? {}, r) && state.roleOids.get(r) === row.roleOids[i],
    )
  );
}

/**
 * The members of the set of `roles` (sorted, once each). Throws {@link ManagedRolesError} 57P03 for
 * a role without a PostgreSQL role yet (a reload is adding it).
 */
export function members(state: DatabaseState, roles: readonly string[]): SetMember[] {
  const out: SetMember[] = [];
  for (const role of [...new Set(roles)].sort()) {
    const oid = state.roleOids.get(role);
    if (oid === undefined)
      throw new ManagedRolesError(
        '57P03',
        `role "${role}" has no PostgreSQL role yet; try again in a moment`,
      );
    out.push({ role, pgName: managedRoleName(state.workspace || undefined, role), oid });
  }
  return out;
}

/** Retires `login` (set-logins.ts retireSetLogin: row first, every privilege revoked, then dropped) and forgets it. */
export async function retire(
  c: pg.ClientBase,
  state: DatabaseState,
  login: string,
  log: Logger,
): Promise<void> {
  state.logins.delete(login);
  state.synced?.grants.logins.delete(login);
  const outcome = await retireSetLogin(c, login, async (tx, oid) => {
    await applyGrants(tx, login, await readHeldPrivileges(tx, oid), new Set(), undefined, log);
  });
  log.info({ event: 'set-login-retired', database: state.name, login, outcome }, 'set login retired');
}

// The managed roles of one proxy: per managed database, its roles, set logins and grants kept in step with the policy and catalog.
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import { databaseIsRuled } from '../policy/database-access.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import { checkAction } from '../policy/rule-match.js';
import { ensureBookkeeping, touchRow, workspaceRows } from './bookkeeping.js';
import { grantRunOf, pendingGrantScope, syncDatabase } from './database-sync.js';
import { applyGrants, retryTransient } from './grant-apply.js';
import { isUnmanagedSchema } from './grant-plan.js';
import { desiredGrants, grantContext } from './grant-run.js';
import { readHeldPrivileges } from './grant-sync.js';
import {
  type DatabaseState,
  ensureRoles,
  isManaged,
  type KnownLogin,
  ManagedRolesError,
  newDatabaseState,
  retire,
  type SetLogin,
  serial,
  members as setMembers,
} from './managed-database.js';
import { checkAdministrationLogin } from './preflight.js';
import { setLoginName } from './role-names.js';
import { ensureSetLogin, type SetMember } from './set-logins.js';

export { isManaged, ManagedRolesError, type SetLogin } from './managed-database.js';

/** A day in ms: `last_used_at` is written at most this often per login (issue 17). */
const DAY_MS = 86_400_000;
/** How long a set login may go unused before the sweep drops it (issue 17: 30 days). */
export const UNUSED_LOGIN_MS = 30 * DAY_MS;
/** How often the sweep runs, and how soon a failed sync is tried again. */
const SWEEP_EVERY_MS = 3_600_000;
const RETRY_SYNC_MS = 5_000;

/** What {@link ManagedRoles} needs from the proxy. */
export interface ManagedRolesOptions {
  readonly logger: Logger;
  readonly connection: ConnectionKind;
  /** The current catalog of a client-facing database (the shared catalog source). */
  readonly catalog: (database: string) => Promise<Catalog>;
}

/**
 * Keeps the managed databases of a proxy as issue 17 describes: each workspace role a NOLOGIN
 * PostgreSQL role, each role set some session used a `pgwarden_set_<hash>` login with its
 * bookkeeping row, each set login holding exactly the grants the decision gives its roles. One
 * instance per proxy; every change to a database is serialized here and, across instances, by the
 * roles advisory lock.
 */
export class ManagedRoles {
  private readonly dbs = new Map<string, DatabaseState>();
  private config: Config | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly o: ManagedRolesOptions) {}

  /**
   * Start-up (serve): for every managed database, checks the administration login (CREATEROLE, and
   * ownership or grant option on every relation; the message names what is missing and `roles:
   * single` as the way out), makes the bookkeeping table and the workspace roles, loads the rows and
   * syncs the grants. Rejects with the first database's problem: the proxy must not start.
   */
  async start(config: Config): Promise<void> {
    this.config = config;
    for (const [name, db] of Object.entries(config.databases)) {
      if (db.roles !== 'managed') continue;
      const state = newDatabaseState(name, db.role_prefix ?? '', db.admin_url ?? db.url);
      await state.admin.use(async (c) => {
        const problem = await checkAdministrationLogin(c, isUnmanagedSchema);
        if (problem) throw new Error(`database ${name}: ${problem}`);
        await ensureBookkeeping(c);
        const oid = await c.query<{ oid: string }>(
          'SELECT oid::int8 AS oid FROM pg_database WHERE datname = current_database()',
        );
        state.databaseOid = Number(oid.rows[0]?.oid);
        state.roleOids = await ensureRoles(c, state, config);
        for (const row of await workspaceRows(c, state.workspace))
          state.logins.set(row.login, { password: row.password, roles: row.roles, touchedAt: 0 });
      });
      this.dbs.set(name, state);
      await this.sync(name, await this.o.catalog(name));
      const failure = state.failure;
      if (failure) throw new Error(`database ${name}: the first grant sync failed: ${failure}`);
    }
    if (this.dbs.size > 0) {
      this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
      this.sweeper.unref();
    }
  }

  /** Stops the timers (the proxy is closing). */
  close(): void {
    clearInterval(this.sweeper);
    for (const s of this.dbs.values()) {
      clearTimeout(s.retry);
      s.admin.close();
    }
  }

  /**
   * The login a new session on `database` holding `roles` logs in as upstream, or undefined for the
   * database's `url` login: under `roles: single`, and for a role set that holds MANAGE on the
   * database (or a database no role mentions), as before (MANAGE is trusted). Made on first use;
   * `last_used_at` written at most once a day. Rejects with {@link ManagedRolesError} 57P03 while
   * the database's grants could not be synced, or 08006 when the login cannot be made.
   */
  async loginFor(config: Config, database: string, roles: readonly string[]): Promise<SetLogin | undefined> {
    const state = this.dbs.get(database);
    if (!state || this.usesUrlLogin(config, database, roles)) return undefined;
    await state.settled;
    await state.chain.catch(() => {});
    if (state.failure)
      throw new ManagedRolesError(
        '57P03',
        `pgwarden cannot bring the grants of database "${database}" up to date; connections are refused until it can (see the proxy log)`,
      );
    const members = setMembers(state, roles);
    const login = setLoginName(
      state.databaseOid,
      members.map((m) => m.oid),
    );
    const known = state.logins.get(login);
    if (known) {
      if (Date.now() - known.touchedAt > DAY_MS) this.touch(state, login, known);
      return { user: login, password: known.password };
    }
    return this.ensure(state, login, members);
  }

  /**
   * A set login's password was refused upstream (28P01): read the row again and use another
   * instance's new password, or take the login back with a new one (issue 17: "A set login whose
   * password was changed behind pgwarden's back: taken back on next use").
   */
  async loginRejected(database: string, login: SetLogin, roles: readonly string[]): Promise<SetLogin> {
    const state = this.dbs.get(database);
    if (!state) throw new ManagedRolesError('08006', `database "${database}" is not managed`);
    return this.ensure(state, login.user, setMembers(state, roles), login.password);
  }

  /** True when sessions on `database` log in as set logins (managed, and started as such). */
  manages(config: Config, database: string): boolean {
    return this.dbs.has(database) && isManaged(config, database);
  }

  /**
   * True when a session of `roles` on `database` logs in as the database's `url` login: the database
   * is not managed, no role mentions it, or the roles hold MANAGE on it (issue 17: "as today").
   */
  usesUrlLogin(config: Config, database: string, roles: readonly string[]): boolean {
    if (!this.manages(config, database) || !databaseIsRuled(config, database)) return true;
    return checkAction(config, roles, 'MANAGE', database, { level: 'database' }).granted;
  }

  /** A session logged in as `login` opened (+1) or closed (-1). */
  using(database: string, login: string, delta: 1 | -1): void {
    const state = this.dbs.get(database);
    if (!state) return;
    const n = (state.inUse.get(login) ?? 0) + delta;
    if (n <= 0) state.inUse.delete(login);
    else state.inUse.set(login, n);
  }

  /**
   * Resolves when the last reload's work on `database` (roles, retirements, grant sync) is done,
   * failed or not: open sessions wait for it before deciding under the new policy, whose statements
   * may need the grants it brings. Resolved at once for a database that is not managed.
   */
  settled(database: string): Promise<void> {
    return this.dbs.get(database)?.settled ?? Promise.resolve();
  }

  /** Whether new sessions on `database` are refused now, and why (for tests and /readyz). */
  failureOf(database: string): string | undefined {
    return this.dbs.get(database)?.failure;
  }

  /**
   * A policy reload: makes roles the new policy adds, retires the set logins holding a role it
   * removed (their sessions are closed by the sessions' own recheck), and syncs every login's grants
   * to the new rules. New sessions wait for it. Never rejects (failures are logged and refuse new
   * sessions until a sync succeeds).
   */
  reload(next: Config): Promise<void> {
    this.config = next;
    const all: Promise<void>[] = [];
    for (const state of this.dbs.values()) {
      state.settled = this.sync(state.name);
      all.push(state.settled);
    }
    return Promise.all(all).then(() => undefined);
  }

  /**
   * Syncs the grants of every set login of `database`'s workspace (and takes any privilege from the
   * workspace roles) to what the decision gives their sets on `catalog` (default: the current one),
   * in one transaction under the roles lock: at start, after a reload, and after every catalog read
   * (DDL through pgwarden, refreshes). Retires logins whose roles are gone. On failure the transaction
   * rolls back (the previous grants stand), the error is logged, new sessions are refused, and the
   * sync is tried again. Never rejects.
   */
  async sync(database: string, catalog?: Catalog): Promise<void> {
    const state = this.dbs.get(database);
    if (!state) return;
    const failed = (e: unknown) => {
      state.failure = (e as Error).message;
      this.o.logger.error(
        { event: 'grant-sync-failed', database, err: state.failure },
        'grant sync failed and was rolled back; the previous grants stand and new sessions are refused',
      );
      clearTimeout(state.retry);
      state.retry = setTimeout(() => void this.sync(database), RETRY_SYNC_MS);
      state.retry.unref();
    };
    // The catalog is fetched before queueing: reading it runs this same sync from the catalog
    // source's hook, which must not wait behind this call.
    let cat: Catalog;
    try {
      cat = catalog ?? (await this.o.catalog(database));
    } catch (e) {
      failed(e);
      return;
    }
    await serial(state, async () => {
      try {
        await syncDatabase(state, this.config as Config, cat, this.o);
        clearTimeout(state.retry);
        state.retry = undefined;
        if (state.failure)
          this.o.logger.info({ event: 'grant-sync-recovered', database }, 'grant sync succeeded again');
        state.failure = undefined;
      } catch (e) {
        failed(e);
      }
    });
  }

  /**
   * The relations whose grants for set login `login` (its PostgreSQL name) a sync of `database`
   * to `catalog` may change (database-sync.ts pendingGrantScope); undefined when unknown.
   */
  pendingScope(database: string, login: string, catalog: Catalog): ReadonlySet<number> | undefined {
    const state = this.dbs.get(database);
    const config = this.config;
    return state && config ? pendingGrantScope(state, config, login, catalog) : undefined;
  }

  /**
   * A full sync of `database` now, on its current catalog, as after a reload (not scoped to a
   * catalog change): for grants edited behind pgwarden's back, and for tests comparing what a
   * scoped sync left with what a full one gives. Never rejects.
   */
  async syncInFull(database: string): Promise<void> {
    const state = this.dbs.get(database);
    if (!state) return;
    await serial(state, async () => {
      state.synced = undefined;
    });
    await this.sync(database);
  }

  /**
   * Drops the set logins of this instance's workspace rows unused for {@link UNUSED_LOGIN_MS}
   * (never by listing the cluster's `pgwarden_set_*` roles; never one with an open session here,
   * whose row is touched instead). Never rejects.
   */
  async sweep(now = Date.now()): Promise<string[]> {
    const dropped: string[] = [];
    for (const state of this.dbs.values()) {
      await serial(state, async () => {
        await state.admin.use(async (c) => {
          for (const row of await workspaceRows(c, state.workspace)) {
            if (state.inUse.has(row.login)) {
              await touchRow(c, row.login);
              continue;
            }
            if (now - row.lastUsedAt.getTime() < UNUSED_LOGIN_MS) continue;
            await retire(c, state, row.login, this.o.logger);
            dropped.push(row.login);
          }
        });
      }).catch((e) =>
        this.o.logger.error(
          { event: 'sweep-failed', database: state.name, err: (e as Error).message },
          'sweep failed',
        ),
      );
    }
    if (dropped.length > 0) this.o.logger.info({ event: 'sweep', dropped }, 'unused set logins dropped');
    return dropped;
  }

  // ---- internals ----

  private async ensure(
    state: DatabaseState,
    login: string,
    members: SetMember[],
    rejected?: string,
  ): Promise<SetLogin> {
    // Outside the queue: reading the catalog may queue a sync behind this very call.
    const catalog = await this.o.catalog(state.name);
    return serial(state, async () => {
      const config = this.config as Config;
      try {
        let flags: Map<number, number> | undefined;
        const r = await retryTransient(() =>
          state.admin.use((c) =>
            ensureSetLogin(c, {
              login,
              workspace: state.workspace,
              members,
              ...(rejected !== undefined ? { rejected: { known: rejected } } : {}),
              grant: async (tx, oid) => {
                const roles = members.map((m) => m.role);
                const d = desiredGrants(
                  grantRunOf(state, config, this.o),
                  roles,
                  catalog,
                  await grantContext(tx, catalog),
                );
                await applyGrants(
                  tx,
                  login,
                  await readHeldPrivileges(tx, oid),
                  d.keys,
                  catalog,
                  this.o.logger,
                );
                flags = d.flags;
              },
            }),
          ),
        );
        // A later sync scoped to a catalog change may start from these grants when they were
        // computed on the catalog it starts from.
        if (flags) state.synced?.grants.logins.set(login, { version: catalog.version, flags });
        state.logins.set(login, {
          password: r.password,
          roles: members.map((m) => m.role),
          touchedAt: Date.now(),
        });
        if (r.changed)
          this.o.logger.info(
            {
              event: `set-login-${r.changed}`,
              database: state.name,
              login,
              roles: members.map((m) => m.role),
            },
            'set login',
          );
        return { user: login, password: r.password };
      } catch (e) {
        this.o.logger.error(
          { event: 'set-login-failed', database: state.name, login, err: (e as Error).message },
          'set login failed',
        );
        throw new ManagedRolesError(
          '08006',
          'pgwarden could not prepare the upstream login of your roles; see the proxy log',
        );
      }
    });
  }

  private touch(state: DatabaseState, login: string, known: KnownLogin): void {
    known.touchedAt = Date.now();
    void state.admin
      .use((c) => touchRow(c, login))
      .catch((e) =>
        this.o.logger.warn(
          { event: 'touch-failed', login, err: (e as Error).message },
          'last_used_at not written',
        ),
      );
  }
}

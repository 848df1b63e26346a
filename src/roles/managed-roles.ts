// The managed roles of one proxy: per managed database, its roles, set logins and grants kept in step with the policy and catalog.
import pg from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import { grantSync } from '../ops/metrics.js';
import type { Config } from '../policy/config-schema.js';
import { databaseIsRuled } from '../policy/database-access.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import { policyVersion } from '../policy/policy-version.js';
import { checkAction } from '../policy/rule-match.js';
import { loadParser, majorOfServerVersion } from '../sql/parser.js';
import {
  ensureBookkeeping,
  ROLES_LOCK_SQL,
  type SetLoginRow,
  touchRow,
  workspaceRows,
} from './bookkeeping.js';
import { catalogDigest, isUnmanagedSchema, type PrivilegeKey, planGrants } from './grant-plan.js';
import {
  grantableOnly,
  grantDiff,
  readDefaultSequences,
  readHeldPrivileges,
  readUngrantable,
} from './grant-sync.js';
import { checkAdministrationLogin } from './preflight.js';
import { managedRoleName, setLoginName } from './role-names.js';
import { ensureSetLogin, retireSetLogin, type SetMember } from './set-logins.js';
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

/**
 * SQLSTATEs of a GRANT or REVOKE whose object was dropped since the catalog was read:
 * undefined_table, undefined_column, invalid_schema_name, undefined_object.
 */
const GONE: ReadonlySet<string> = new Set(['42P01', '42703', '3F000', '42704']);

/**
 * SQLSTATEs worth one more try at once: concurrent DDL on the same catalog rows ("tuple
 * concurrently updated", XX000), deadlock_detected, serialization_failure.
 */
const TRANSIENT: ReadonlySet<string> = new Set(['XX000', '40P01', '40001']);

/** Runs `f`, once more when it rejects with a {@link TRANSIENT} SQLSTATE. */
async function retryTransient<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (!TRANSIENT.has((e as { code?: string }).code ?? '')) throw e;
    await new Promise((r) => setTimeout(r, 50));
    return f();
  }
}

/** A day in ms: `last_used_at` is written at most this often per login (issue 17). */
const DAY_MS = 86_400_000;
/** How long a set login may go unused before the sweep drops it (issue 17: 30 days). */
export const UNUSED_LOGIN_MS = 30 * DAY_MS;
/** How often the sweep runs, and how soon a failed sync is tried again. */
const SWEEP_EVERY_MS = 3_600_000;
const RETRY_SYNC_MS = 5_000;
/** A full sync at least this often, even when neither policy nor catalog changed (grants edited behind pgwarden). */
const RESYNC_MS = 600_000;

interface KnownLogin {
  password: string;
  roles: readonly string[];
  /** When this instance last wrote last_used_at (ms). */
  touchedAt: number;
}

interface DatabaseState {
  readonly name: string;
  readonly workspace: string;
  readonly adminUrl: string;
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
  /** What the last successful sync was computed from (policy version, catalog digest), and when. */
  synced: { key: string; at: number } | undefined;
  retry: NodeJS.Timeout | undefined;
  /** The administration connection, kept open between uses (issue 15: no connect per grant sync). */
  adminConn: Promise<pg.Client> | undefined;
  /** Uses of the administration connection run one after another. */
  adminChain: Promise<unknown>;
}

/** What {@link ManagedRoles} needs from the proxy. */
export interface ManagedRolesOptions {
  readonly logger: Logger;
  readonly connection: ConnectionKind;
  /** The current catalog of a client-facing database (the shared catalog source). */
  readonly catalog: (database: string) => Promise<Catalog>;
}

/** True when `database` is under `roles: managed` in `config`. */
export function isManaged(config: Config, database: string): boolean {
  return Object.hasOwn(config.databases, database) && config.databases[database]?.roles === 'managed';
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
      const state: DatabaseState = {
        name,
        workspace: db.role_prefix ?? '',
        adminUrl: db.admin_url ?? db.url,
        databaseOid: 0,
        roleOids: new Map(),
        logins: new Map(),
        inUse: new Map(),
        failure: undefined,
        chain: Promise.resolve(),
        settled: Promise.resolve(),
        synced: undefined,
        retry: undefined,
        adminConn: undefined,
        adminChain: Promise.resolve(),
      };
      await this.admin(state, async (c) => {
        const problem = await checkAdministrationLogin(c, isUnmanagedSchema);
        if (problem) throw new Error(`database ${name}: ${problem}`);
        await ensureBookkeeping(c);
        const oid = await c.query<{ oid: string }>(
          'SELECT oid::int8 AS oid FROM pg_database WHERE datname = current_database()',
        );
        state.databaseOid = Number(oid.rows[0]?.oid);
        state.roleOids = await this.ensureRoles(c, state, config);
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
      this.dropAdmin(s);
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
    const members = this.members(state, roles);
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
    return this.ensure(state, login.user, this.members(state, roles), login.password);
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
    await this.serial(state, async () => {
      const config = this.config as Config;
      const key = `${policyVersion(config)}:${catalogDigest(cat)}`;
      // Nothing grants are computed from changed since the last sync (a catalog read again after an
      // unknown name, the TTL): skip it, but sync in full at least every RESYNC_MS.
      if (!state.failure && state.synced?.key === key && Date.now() - state.synced.at < RESYNC_MS) return;
      const started = performance.now();
      try {
        const outcome = await retryTransient(() =>
          this.admin(state, (c) => this.syncWith(c, state, config, cat)),
        );
        grantSync(database, true, performance.now() - started);
        clearTimeout(state.retry);
        state.retry = undefined;
        state.synced = { key, at: Date.now() };
        if (state.failure)
          this.o.logger.info({ event: 'grant-sync-recovered', database }, 'grant sync succeeded again');
        state.failure = undefined;
        this.o.logger.info({ event: 'grant-sync', database, ...outcome }, 'grants synced');
      } catch (e) {
        grantSync(database, false, performance.now() - started);
        failed(e);
      }
    });
  }

  /**
   * Drops the set logins of this instance's workspace rows unused for {@link UNUSED_LOGIN_MS}
   * (never by listing the cluster's `pgwarden_set_*` roles; never one with an open session here,
   * whose row is touched instead). Never rejects.
   */
  async sweep(now = Date.now()): Promise<string[]> {
    const dropped: string[] = [];
    for (const state of this.dbs.values()) {
      await this.serial(state, async () => {
        await this.admin(state, async (c) => {
          for (const row of await workspaceRows(c, state.workspace)) {
            if (state.inUse.has(row.login)) {
              await touchRow(c, row.login);
              continue;
            }
            if (now - row.lastUsedAt.getTime() < UNUSED_LOGIN_MS) continue;
            await this.retire(c, state, row.login);
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

  private serial<T>(state: DatabaseState, f: () => Promise<T>): Promise<T> {
    const run = state.chain.catch(() => {}).then(f);
    state.chain = run.catch(() => {});
    return run;
  }

  /**
   * Runs `f` on the database's administration connection (opened on first use, kept open, opened
   * again after it breaks), one use at a time. A use that fails is followed by a ROLLBACK, so the
   * next one never starts inside its transaction; a connection that cannot take it is dropped.
   */
  private admin<T>(state: DatabaseState, f: (c: pg.Client) => Promise<T>): Promise<T> {
    const run = state.adminChain
      .catch(() => {})
      .then(async () => {
        const c = await this.adminClient(state);
        try {
          return await f(c);
        } catch (e) {
          await c.query('ROLLBACK').catch(() => this.dropAdmin(state));
          throw e;
        }
      });
    state.adminChain = run.catch(() => {});
    return run;
  }

  private adminClient(state: DatabaseState): Promise<pg.Client> {
    if (state.adminConn) return state.adminConn;
    const c = new pg.Client({
      connectionString: state.adminUrl,
      connectionTimeoutMillis: 10_000,
      application_name: 'pgwarden admin',
    });
    const conn = c.connect().then(
      () => c,
      (e: unknown) => {
        if (state.adminConn === conn) state.adminConn = undefined;
        throw e;
      },
    );
    const lost = () => {
      if (state.adminConn === conn) state.adminConn = undefined;
    };
    c.on('error', lost);
    c.on('end', lost);
    state.adminConn = conn;
    return conn;
  }

  private dropAdmin(state: DatabaseState): void {
    const conn = state.adminConn;
    state.adminConn = undefined;
    conn?.then((c) => c.end()).catch(() => {});
  }

  private async ensureRoles(
    c: pg.ClientBase,
    state: DatabaseState,
    config: Config,
  ): Promise<Map<string, number>> {
    const names = Object.keys(config.roles);
    const pgNames = names.map((n) => managedRoleName(config.databases[state.name]?.role_prefix, n));
    const oids = await ensureWorkspaceRoles(c, pgNames);
    return new Map(names.map((n, i) => [n, oids.get(pgNames[i] as string) as number]));
  }

  private members(state: DatabaseState, roles: readonly string[]): SetMember[] {
    const prefix = state.workspace;
    const out: SetMember[] = [];
    for (const role of [...new Set(roles)].sort()) {
      const oid = state.roleOids.get(role);
      if (oid === undefined)
        throw new ManagedRolesError(
          '57P03',
          `role "${role}" has no PostgreSQL role yet; try again in a moment`,
        );
      out.push({ role, pgName: managedRoleName(prefix || undefined, role), oid });
    }
    return out;
  }

  private async ensure(
    state: DatabaseState,
    login: string,
    members: SetMember[],
    rejected?: string,
  ): Promise<SetLogin> {
    // Outside the queue: reading the catalog may queue a sync behind this very call.
    const catalog = await this.o.catalog(state.name);
    return this.serial(state, async () => {
      const config = this.config as Config;
      try {
        const r = await retryTransient(() =>
          this.admin(state, (c) =>
            ensureSetLogin(c, {
              login,
              workspace: state.workspace,
              members,
              ...(rejected !== undefined ? { rejected: { known: rejected } } : {}),
              grant: async (tx, oid) => {
                const ctx = await this.grantContext(tx, catalog);
                await this.applyGrants(
                  tx,
                  login,
                  oid,
                  this.desired(
                    config,
                    state,
                    members.map((m) => m.role),
                    catalog,
                    ctx,
                  ),
                  catalog,
                );
              },
            }),
          ),
        );
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
    void this.admin(state, (c) => touchRow(c, login)).catch((e) =>
      this.o.logger.warn(
        { event: 'touch-failed', login, err: (e as Error).message },
        'last_used_at not written',
      ),
    );
  }

  private async grantContext(c: pg.ClientBase, catalog: Catalog) {
    // Grants ask the decision about analyzed statements: the server's parser must be loaded.
    await loadParser(majorOfServerVersion(catalog.serverVersionNum));
    return {
      sequences: await readDefaultSequences(c),
      ungrantable: await readUngrantable(c, isUnmanagedSchema),
    };
  }

  private desired(
    config: Config,
    state: DatabaseState,
    roles: readonly string[],
    catalog: Catalog,
    ctx: Awaited<ReturnType<ManagedRoles['grantContext']>>,
  ): Set<PrivilegeKey> {
    const plan = planGrants({
      config,
      roles,
      database: state.name,
      connection: this.o.connection,
      catalog,
      defaultSequences: ctx.sequences,
    });
    const { keep, dropped } = grantableOnly(plan, ctx.ungrantable);
    if (dropped.length > 0)
      this.o.logger.warn(
        { event: 'grant-not-grantable', database: state.name, roles, privileges: dropped.slice(0, 20) },
        'the administration login cannot grant these privileges: they stay ungranted',
      );
    return keep;
  }

  private async applyGrants(
    c: pg.ClientBase,
    role: string,
    oid: number,
    desired: ReadonlySet<PrivilegeKey>,
    catalog?: Catalog,
  ): Promise<number> {
    const held = await readHeldPrivileges(c, oid);
    const statements = grantDiff(role, held, desired, catalog);
    if (statements.length === 0) return 0;
    await c.query('SAVEPOINT pgwarden_grants');
    try {
      await c.query(statements.join(';\n'));
      await c.query('RELEASE SAVEPOINT pgwarden_grants');
      return statements.length;
    } catch (e) {
      if (!GONE.has((e as { code?: string }).code ?? '')) throw e;
      await c.query('ROLLBACK TO SAVEPOINT pgwarden_grants');
    }
    // An object of the catalog was dropped meanwhile (DDL behind pgwarden's back): one statement at
    // a time, skipping those whose object is gone (a privilege on it is gone with it).
    let applied = 0;
    for (const sql of statements) {
      await c.query('SAVEPOINT pgwarden_grant');
      try {
        await c.query(sql);
        await c.query('RELEASE SAVEPOINT pgwarden_grant');
        applied++;
      } catch (e) {
        if (!GONE.has((e as { code?: string }).code ?? '')) throw e;
        await c.query('ROLLBACK TO SAVEPOINT pgwarden_grant');
        this.o.logger.info({ event: 'grant-skipped', role, sql, err: (e as Error).message }, 'object gone');
      }
    }
    await c.query('RELEASE SAVEPOINT pgwarden_grants');
    return applied;
  }

  private async syncWith(c: pg.ClientBase, state: DatabaseState, config: Config, catalog: Catalog) {
    state.roleOids = await this.ensureRoles(c, state, config);
    const rows = await workspaceRows(c, state.workspace);
    let retired = 0;
    for (const row of rows) {
      if (this.rowIsCurrent(state, row)) continue;
      await this.retire(c, state, row.login);
      retired++;
    }
    const ctx = await this.grantContext(c, catalog);
    let changes = 0;
    let logins = 0;
    await c.query('BEGIN');
    try {
      await c.query(ROLES_LOCK_SQL);
      const oids = await c.query<{ rolname: string; oid: string }>(
        'SELECT rolname, oid::int8 AS oid FROM pg_roles WHERE rolname = ANY($1::text[])',
        [[...rows.map((r) => r.login)]],
      );
      const loginOid = new Map(oids.rows.map((r) => [r.rolname, Number(r.oid)]));
      for (const row of rows) {
        const oid = loginOid.get(row.login);
        if (oid === undefined || !this.rowIsCurrent(state, row)) continue;
        changes += await this.applyGrants(
          c,
          row.login,
          oid,
          this.desired(config, state, row.roles, catalog, ctx),
          catalog,
        );
        logins++;
      }
      for (const [role, oid] of state.roleOids)
        changes += await this.applyGrants(
          c,
          managedRoleName(state.workspace || undefined, role),
          oid,
          new Set(),
          catalog,
        );
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    }
    return { logins, changes, retired };
  }

  /** A row whose roles are all still in the policy, with the same OIDs. */
  private rowIsCurrent(state: DatabaseState, row: SetLoginRow): boolean {
    return (
      row.roles.length > 0 &&
      row.roles.every(
        (r, i) => Object.hasOwn(this.config?.roles ?? {}, r) && state.roleOids.get(r) === row.roleOids[i],
      )
    );
  }

  private async retire(c: pg.ClientBase, state: DatabaseState, login: string): Promise<void> {
    state.logins.delete(login);
    const outcome = await retireSetLogin(c, login, async (tx, oid) => {
      await this.applyGrants(tx, login, oid, new Set());
    });
    this.o.logger.info(
      { event: 'set-login-retired', database: state.name, login, outcome },
      'set login retired',
    );
  }
}

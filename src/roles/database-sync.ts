// The grant sync of one managed database: in full, or scoped to what a catalog change reaches, and what it leaves for the next one.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import { grantSync } from '../ops/metrics.js';
import type { Config } from '../policy/config-schema.js';
import type { ConnectionKind } from '../policy/decision-types.js';
import { policyVersion } from '../policy/policy-version.js';
import { loadParser, majorOfServerVersion } from '../sql/parser.js';
import { workspaceRows, workspaceRowsOf, workspaceRowsSql } from './bookkeeping.js';
import { retryTransient } from './grant-apply.js';
import {
  type GrantRun,
  grantContextOf,
  grantContextSql,
  type SyncedGrants,
  type SyncOutcome,
  scopedTables,
  syncAllGrants,
  syncScopedGrants,
} from './grant-run.js';
import { grantScope } from './grant-scope.js';
import { type DatabaseState, ensureRoles, retire, rowIsCurrent } from './managed-database.js';

/** A full sync at least this often, even when neither policy nor catalog changed (grants edited behind pgwarden). */
const RESYNC_MS = 600_000;

/** What a database's sync needs of the proxy. */
export interface SyncDeps {
  readonly logger: Logger;
  readonly connection: ConnectionKind;
}

/**
 * Syncs the grants of `state`'s set logins (and takes any privilege from its workspace roles) to
 * what `config` gives their sets on `catalog`, in one transaction under the roles lock (the
 * caller serializes syncs of one database). Issue 15: under the policy of the last sync, with no
 * failure since and a full sync less than RESYNC_MS ago, only the relations the change from the
 * last synced catalog reaches are synced (grant-scope.ts; nothing at all when none), else every
 * login over the whole catalog, roles made and logins whose roles are gone retired first.
 * Resolves when synced (logged, with the scope's size); rejects with the failure after the
 * transaction rolled back (the previous grants stand), `state` unchanged.
 */
export async function syncDatabase(
  state: DatabaseState,
  config: Config,
  catalog: Catalog,
  deps: SyncDeps,
): Promise<void> {
  const key = String(policyVersion(config));
  const last = state.synced;
  let scope: ReadonlySet<number> | undefined;
  if (!state.failure && last?.key === key && Date.now() - last.at < RESYNC_MS) {
    if (last.grants.catalog === catalog) return;
    const s = grantScope(last.grants.catalog, catalog);
    if ('relations' in s) {
      if (s.relations.size === 0) {
        state.synced = { ...last, grants: advanced(last.grants, catalog) };
        return;
      }
      scope = s.relations;
    } else
      deps.logger.debug(
        { event: 'grant-sync-full', database: state.name, why: s.full },
        'grant sync in full',
      );
  }
  const started = performance.now();
  try {
    const r = await retryTransient(() =>
      state.admin.use((c) =>
        scope && last
          ? syncScoped(c, state, config, last.grants, catalog, scope, deps)
          : syncFull(c, state, config, catalog, deps),
      ),
    );
    const ms = performance.now() - started;
    grantSync(state.name, true, ms);
    state.synced = { key, at: scope && last ? last.at : Date.now(), grants: r.synced };
    deps.logger.info(
      { event: 'grant-sync', database: state.name, ...r.outcome, ms: Math.round(ms * 10) / 10 },
      'grants synced',
    );
  } catch (e) {
    grantSync(state.name, false, performance.now() - started);
    throw e;
  }
}

/**
 * The user relations (by OID) whose grants the sync of `state` to `catalog` under `config` may
 * change for `login` (a set login's PostgreSQL name): the scope of the change from the catalog of
 * the last successful sync (grant-scope.ts), which is what that sync would apply. Undefined when it
 * cannot be scoped so: no successful sync yet, a failure since, the policy changed, a full sync
 * due (RESYNC_MS), `login`'s grants not computed on that catalog, or a change grantScope cannot
 * scope. Issue 15: a set login's statement that reads none of these may run under the grants in
 * force before that sync has applied. Pure.
 */
export function pendingGrantScope(
  state: DatabaseState,
  config: Config,
  login: string,
  catalog: Catalog,
): ReadonlySet<number> | undefined {
  const last = state.synced;
  if (state.failure || !last || last.key !== String(policyVersion(config))) return undefined;
  if (Date.now() - last.at >= RESYNC_MS) return undefined;
  if (last.grants.logins.get(login)?.version !== last.grants.catalog.version) return undefined;
  if (last.grants.catalog === catalog) return new Set();
  const s = grantScope(last.grants.catalog, catalog);
  return 'relations' in s ? s.relations : undefined;
}

/** What a grant sync (or a new login's grants) of `state` under `config` needs (grant-run.ts). */
export function grantRunOf(state: DatabaseState, config: Config, deps: SyncDeps): GrantRun {
  return {
    config,
    database: state.name,
    workspace: state.workspace,
    connection: deps.connection,
    log: deps.logger,
    roleOids: state.roleOids,
  };
}

/** The full sync: roles made, logins whose roles are gone retired, every login over the whole catalog. */
async function syncFull(
  c: pg.ClientBase,
  state: DatabaseState,
  config: Config,
  catalog: Catalog,
  deps: SyncDeps,
): Promise<{ outcome: SyncOutcome & { retired: number }; synced: SyncedGrants }> {
  state.roleOids = await ensureRoles(c, state, config);
  const rows = await workspaceRows(c, state.workspace);
  let retired = 0;
  for (const row of rows) {
    if (rowIsCurrent(config, state, row)) continue;
    await retire(c, state, row.login, deps.logger);
    retired++;
  }
  const current = rows.filter((r) => rowIsCurrent(config, state, r));
  const r = await syncAllGrants(c, grantRunOf(state, config, deps), current, catalog);
  return { outcome: { ...r.outcome, retired }, synced: r.synced };
}

/**
 * The sync after a catalog change under the same policy: only `scope` (grant-run.ts
 * syncScopedGrants). A login whose roles are no longer current makes it a full sync (it is
 * retired there).
 */
async function syncScoped(
  c: pg.ClientBase,
  state: DatabaseState,
  config: Config,
  synced: SyncedGrants,
  catalog: Catalog,
  scope: ReadonlySet<number>,
  deps: SyncDeps,
): Promise<{ outcome: SyncOutcome; synced: SyncedGrants }> {
  // One round trip: the workspace's rows and what the sync needs of the relations in scope.
  await loadParser(majorOfServerVersion(catalog.serverVersionNum));
  const r = (await c.query(
    `${workspaceRowsSql(state.workspace)};\n${grantContextSql(scopedTables(catalog, scope))}`,
  )) as unknown as pg.QueryResult[];
  if (!Array.isArray(r) || r.length !== 4 || !r[0])
    throw new Error('the scoped sync read returned no four results');
  const rows = workspaceRowsOf(r[0]);
  if (!rows.every((row) => rowIsCurrent(config, state, row)))
    return syncFull(c, state, config, catalog, deps);
  return syncScopedGrants(
    c,
    grantRunOf(state, config, deps),
    rows,
    synced,
    catalog,
    scope,
    grantContextOf(r),
  );
}

/** `grants` for `catalog` when no relation's grants differ from those on `grants.catalog` (an empty scope). */
function advanced(grants: SyncedGrants, catalog: Catalog): SyncedGrants {
  const logins = new Map<string, { version: number; flags: Map<number, number> }>();
  for (const [login, l] of grants.logins)
    logins.set(login, l.version === grants.catalog.version ? { ...l, version: catalog.version } : l);
  return { ...grants, catalog, logins };
}

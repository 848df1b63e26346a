// pgwarden's Prometheus metrics: one registry per process, one-line hot-path calls, label values bounded.
import type { Registry } from 'prom-client';
import {
  type Cell,
  CounterFamily,
  type Family,
  type FamilyOptions,
  HistogramFamily,
} from './metric-families.js';

/** One row of {@link FAMILIES}: a counter or gauge family's options, or a histogram's (with `buckets`). */
type FamilyRow = FamilyOptions<readonly string[]> &
  (
    | { readonly type?: 'counter' | 'gauge'; readonly buckets?: never }
    | { readonly buckets: readonly number[] }
  );

/** The family each row makes: a HistogramFamily for a row with buckets, else a CounterFamily. */
type FamilyOf<R extends FamilyRow> = R extends { readonly buckets: readonly number[] }
  ? HistogramFamily<R['labelNames']>
  : CounterFamily<R['labelNames']>;

/** Every family of this module, registered with the registry when it is first asked for. */
const families: Family[] = [];

/** Makes the family of each row, in order, and keeps it for the registry. */
function makeFamilies<T extends Record<string, FamilyRow>>(
  rows: T,
): { readonly [K in keyof T]: FamilyOf<T[K]> } {
  const made: Record<string, Family> = {};
  for (const [key, row] of Object.entries(rows)) {
    const f =
      'buckets' in row && row.buckets
        ? new HistogramFamily({ ...row, buckets: row.buckets })
        : new CounterFamily(row);
    families.push(f);
    made[key] = f;
  }
  return made as { readonly [K in keyof T]: FamilyOf<T[K]> };
}
let registry: Promise<Registry> | undefined;

/**
 * The registry of every pgwarden metric (one per process), with prom-client's default process
 * metrics (resident memory, heap, event-loop lag, GC, open handles). prom-client is loaded on the
 * first call: the hot path adds to plain numbers (metric-families.ts) and needs none of it, so a
 * process that never serves `/metrics` neither loads it nor watches its event loop. `/metrics`
 * serves it; under `serve --workers N` each worker's registry is what prom-client's
 * `AggregatorRegistry` merges (`AggregatorRegistry.setRegistries`), each family declaring how
 * (`sum`, or `max` for the epoch gauge).
 */
export function metricsRegistry(): Promise<Registry> {
  registry ??= import('prom-client').then(({ Registry, collectDefaultMetrics }) => {
    const r = new Registry();
    for (const f of families) f.registerWith(r);
    collectDefaultMetrics({ register: r });
    return r;
  });
  return registry;
}

/** Durations of pgwarden's own work per statement (s): 5 µs to 1 s. */
const PROXY_BUCKETS = [
  0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1,
];
/** Durations upstream (s): 100 µs to 60 s. */
const UPSTREAM_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/**
 * Every family, one row each: its Prometheus name, help and label names, its kind (`buckets`: a
 * histogram, else a counter, or a gauge with `type: 'gauge'`), cardinality cap and aggregator.
 * Registered in this order.
 */
const FAMILIES = {
  clientConnections: {
    name: 'pgwarden_client_connections',
    help: 'Client connections now: active (logged in, counted against limits.max_client_connections) and pending (still logging in).',
    labelNames: ['state'],
    type: 'gauge',
  },
  clientConnectionsTotal: {
    name: 'pgwarden_client_connections_total',
    help: 'Client connections accepted (TCP), whatever became of them.',
    labelNames: [],
  },
  refusedConnections: {
    name: 'pgwarden_client_connections_refused_total',
    help: 'Client connections refused before or at login, by reason: the SQLSTATE condition name of the FATAL sent.',
    labelNames: ['reason'],
    cap: 64,
  },
  upstreamSessions: {
    name: 'pgwarden_upstream_sessions',
    help: 'Upstream sessions open now (one per logged-in client).',
    labelNames: [],
    type: 'gauge',
  },
  upstreamSessionsTotal: {
    name: 'pgwarden_upstream_sessions_total',
    help: 'Upstream sessions opened.',
    labelNames: [],
  },
  statements: {
    name: 'pgwarden_statements_total',
    help: 'Statements decided, by kind (SELECT, INSERT, UPDATE, DELETE, MERGE, MANAGE, SESSION, FETCH, MOVE, UNPARSED) and verdict (allowed, masked: ran with masked columns, refused).',
    labelNames: ['kind', 'verdict'],
    cap: 64,
  },
  refusals: {
    name: 'pgwarden_refusals_total',
    help: 'Statements refused, by the rule that refused (roles.<role>.permissions[<index>], "default-deny" for 42501 without a deny rule, "-" for other refusals) and SQLSTATE.',
    labelNames: ['rule', 'sqlstate'],
    cap: 1000,
  },
  columnRefusals: {
    name: 'pgwarden_column_refusals_total',
    help: 'Statements refused over a column, by database and schema.table.column (only columns of the catalog: an unknown name is refused without one).',
    labelNames: ['database', 'column'],
    cap: 1000,
  },
  maskedColumns: {
    name: 'pgwarden_masked_columns_total',
    help: 'Result columns masked in statements that ran, by role of the session (a session with several roles counts for each).',
    labelNames: ['role'],
    cap: 500,
  },
  analysisCache: {
    name: 'pgwarden_analysis_cache_total',
    help: 'Analysis cache lookups: result hit (the exact text), normalized_hit (the same text up to literals) or miss (analyzed).',
    labelNames: ['result'],
  },
  decisionCache: {
    name: 'pgwarden_decision_cache_total',
    help: 'Decision cache lookups: result hit or miss (decided).',
    labelNames: ['result'],
  },
  catalogReads: {
    name: 'pgwarden_catalog_reads_total',
    help: 'Catalog reads on the shared catalog connection, by database, kind (full or incremental) and result (ok, failed).',
    labelNames: ['database', 'kind', 'result'],
    cap: 400,
  },
  catalogReadSeconds: {
    name: 'pgwarden_catalog_read_duration_seconds',
    help: 'Duration of catalog reads, by database.',
    labelNames: ['database'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
    cap: 100,
  },
  grantSyncs: {
    name: 'pgwarden_grant_syncs_total',
    help: 'Grant syncs of roles: managed databases, by database and result (ok, failed).',
    labelNames: ['database', 'result'],
    cap: 200,
  },
  grantSyncSeconds: {
    name: 'pgwarden_grant_sync_duration_seconds',
    help: 'Duration of grant syncs, by database.',
    labelNames: ['database'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15],
    cap: 100,
  },
  proxySeconds: {
    name: 'pgwarden_statement_proxy_duration_seconds',
    help: 'Time in pgwarden per Query or Parse message (one in 16 sampled): analysis, decision and rewrite (and a catalog read it waited for), until it was sent upstream or refused.',
    labelNames: [],
    buckets: PROXY_BUCKETS,
  },
  upstreamSeconds: {
    name: 'pgwarden_statement_upstream_duration_seconds',
    help: 'Time upstream per statement that ran (every Execute, one Query in 16 sampled): from its message sent upstream to its CommandComplete.',
    labelNames: [],
    buckets: UPSTREAM_BUCKETS,
  },
  policyEpoch: {
    name: 'pgwarden_policy_epoch',
    help: 'The policy in force: 1 for its epoch (the hash stamped on audit lines).',
    labelNames: ['epoch'],
    type: 'gauge',
    aggregator: 'max',
  },
  policyReloads: {
    name: 'pgwarden_policy_reloads_total',
    help: 'Policy reloads (SIGHUP, a store change, the wire console’s RELOAD).',
    labelNames: [],
  },
} as const satisfies Record<string, FamilyRow>;

/** The families of {@link FAMILIES}, by row name. */
const m = makeFamilies(FAMILIES);
const {
  clientConnections,
  clientConnectionsTotal,
  refusedConnections,
  upstreamSessions,
  upstreamSessionsTotal,
  statements,
  refusals,
  columnRefusals,
  maskedColumns,
  analysisCache,
  decisionCache,
  catalogReads,
  catalogReadSeconds,
  grantSyncs,
  grantSyncSeconds,
  proxySeconds,
  upstreamSeconds,
  policyEpoch,
  policyReloads,
} = m;

/** SQLSTATE condition names (PostgreSQL Appendix A) of the FATALs a connection can be refused with. */
const CONDITION_NAMES: Readonly<Record<string, string>> = {
  '53300': 'too_many_connections',
  '57P03': 'cannot_connect_now',
  '57P01': 'admin_shutdown',
  '28P01': 'invalid_password',
  '28000': 'invalid_authorization_specification',
  '08P01': 'protocol_violation',
  '08006': 'connection_failure',
  '57014': 'query_canceled',
  '0A000': 'feature_not_supported',
  '22023': 'invalid_parameter_value',
  '22021': 'character_not_in_repertoire',
  '3D000': 'invalid_catalog_name',
  '42501': 'insufficient_privilege',
  '58000': 'system_error',
  '53400': 'configuration_limit_exceeded',
};

// Cells whose labels never change: looked up once.
const connectionsAccepted = clientConnectionsTotal.cell();
const upstreamOpen = upstreamSessions.cell();
const upstreamOpened = upstreamSessionsTotal.cell();
const proxyCell = proxySeconds.cell();
const upstreamCell = upstreamSeconds.cell();
const reloadsCell = policyReloads.cell();

/** A TCP connection was accepted by a proxy listener. */
export function connectionAccepted(): void {
  connectionsAccepted.n++;
}

/** A connection was refused before or at login with FATAL `sqlstate` (counted by its condition name; unknown ones as `other`). */
export function connectionRefused(sqlstate: string): void {
  refusedConnections.cell(CONDITION_NAMES[sqlstate] ?? 'other').n++;
}

/** An upstream session opened (+1) or closed (-1). */
export function upstreamSession(delta: 1 | -1): void {
  upstreamOpen.n += delta;
  if (delta > 0) upstreamOpened.n++;
}

/**
 * Adds a proxy listener's connection counts (read at scrape time, nothing on the hot path): `active`
 * logged-in sessions and `pending` logins. Returns the function that removes them (at close).
 */
export function watchConnections(counts: () => { active: number; pending: number }): () => void {
  return clientConnections.addSource(() => {
    const c = counts();
    return [
      [['active'], c.active],
      [['pending'], c.pending],
    ] as const;
  });
}

/** Hit and miss counts of a listener's caches, as the caches count them (sql/analysis-cache.ts, policy/decision-cache.ts). */
export interface CacheCounts {
  readonly analysis: { readonly hits: number; readonly normalizedHits: number; readonly misses: number };
  readonly decision: { readonly hits: number; readonly misses: number };
}

/** Adds a listener's cache counters (read at scrape time). Returns the function that removes them. */
export function watchCaches(counts: () => CacheCounts): () => void {
  const a = analysisCache.addSource(() => {
    const c = counts().analysis;
    return [
      [['hit'], c.hits - c.normalizedHits],
      [['normalized_hit'], c.normalizedHits],
      [['miss'], c.misses],
    ] as const;
  });
  const d = decisionCache.addSource(() => {
    const c = counts().decision;
    return [
      [['hit'], c.hits],
      [['miss'], c.misses],
    ] as const;
  });
  return () => {
    a();
    d();
  };
}

/** Statement kinds' cells per verdict, cached by kind (a handful of constant strings). */
const byKind = new Map<string, { allowed: Cell; masked: Cell; refused: Cell }>();
function kindCells(kind: string): { allowed: Cell; masked: Cell; refused: Cell } {
  let k = byKind.get(kind);
  if (k === undefined) {
    k = {
      allowed: statements.cell(kind, 'allowed'),
      masked: statements.cell(kind, 'masked'),
      refused: statements.cell(kind, 'refused'),
    };
    byKind.set(kind, k);
  }
  return k;
}

/**
 * A statement ran to its CommandComplete: counted by `kind` (audit's kind) and verdict, its
 * `masked` result columns counted for each of `roles` (configured role names), its time upstream
 * (`upstreamMs`, milliseconds; negative: not timed) observed. Allocates nothing once its labels
 * have been seen.
 */
export function statementRan(
  kind: string,
  masked: number,
  roles: readonly string[],
  upstreamMs: number,
): void {
  const k = kindCells(kind);
  if (masked > 0) {
    k.masked.n++;
    for (let i = 0; i < roles.length; i++) maskedColumns.cell(roles[i] as string).n += masked;
  } else k.allowed.n++;
  if (upstreamMs >= 0) upstreamCell.observe(upstreamMs / 1000);
}

/** What a refusal says about itself, for {@link statementRefused} (policy/decision-types.ts's Refusal). */
export interface RefusalFacts {
  readonly sqlstate: string;
  readonly rule?: { readonly role: string; readonly index: number };
  /** `schema.table.column` of the cataloged column the refused reference names, when one does. */
  readonly column?: string;
}

/**
 * A statement was refused: counted by `kind` and `refused`, by rule (the deny rule's config path,
 * `default-deny` for 42501 without one, `-` for refusals of another SQLSTATE) and SQLSTATE, and,
 * when the refusal names a cataloged column, by `database` and that column.
 */
export function statementRefused(kind: string, database: string, r: RefusalFacts): void {
  kindCells(kind).refused.n++;
  const rule = r.rule
    ? `roles.${r.rule.role}.permissions[${r.rule.index}]`
    : r.sqlstate === '42501'
      ? 'default-deny'
      : '-';
  refusals.cell(rule, r.sqlstate).n++;
  if (r.column !== undefined) columnRefusals.cell(database, r.column).n++;
}

/** Time pgwarden spent on one Query or Parse message before sending it upstream or refusing it (ms). */
export function decisionTime(ms: number): void {
  proxyCell.observe(ms / 1000);
}

/** A shared catalog read of `database` (configured name) ended: `kind`, whether it succeeded, its duration (ms). */
export function catalogRead(database: string, kind: 'full' | 'incremental', ok: boolean, ms: number): void {
  catalogReads.cell(database, kind, ok ? 'ok' : 'failed').n++;
  catalogReadSeconds.cell(database).observe(ms / 1000);
}

/** A grant sync of `database` (roles: managed) ended: whether it succeeded, its duration (ms). */
export function grantSync(database: string, ok: boolean, ms: number): void {
  grantSyncs.cell(database, ok ? 'ok' : 'failed').n++;
  grantSyncSeconds.cell(database).observe(ms / 1000);
}

/** The policy in force is now `epoch` (at start and after every reload; `reload` counts a reload). */
export function policyInForce(epoch: string, reload: boolean): void {
  policyEpoch.clear();
  policyEpoch.cell(epoch).n = 1;
  if (reload) reloadsCell.n++;
}

// The relay's shared state and the steps every flow uses: refusing, deciding, auditing, waiting for idle.
import { decisionTime, statementRan, statementRefused } from '../ops/metrics.js';
import type { Refusal } from '../policy/decision-types.js';
import type { StatementAnalysis } from '../sql/analysis-types.js';
import { CATALOG_SCHEMAS } from '../sql/catalog-allowlist.js';
import { type ErrorFields, errorResponse } from '../wire/error-fields.js';
import { type Frame, MessageFramer } from '../wire/framer.js';
import { bind as encodeBind, query as encodeQuery } from '../wire/frontend-encode.js';
import { auditFragment, auditKind, rowsOfTag, type SessionAudit } from './audit.js';
import { normalizeForAudit } from './audit-normalize.js';
import { CatalogUnavailable } from './catalog-source.js';
import type { Expect, PortalEntry, PreparedEntry } from './expected-replies.js';
import { Fifo } from './fifo.js';
import { GateMemo } from './gate-memo.js';
import { planAudit } from './plan-audit.js';
import type { RelayOptions } from './relay-options.js';
import { UpstreamWriteRelay } from './relay-upstream-writes.js';
import { type RetainedMap, RetainedStatements, retainedBytes, retainedCost } from './retained-statements.js';
import { gate } from './statement-gate.js';
import type { GateResult, StatementPlan } from './statement-plan.js';

/**
 * A statement name no client can send: Bind to it fails with 26000 at the upstream without side
 * effects (exec_bind_message looks the statement up before it creates a portal), which aborts
 * the upstream transaction exactly as the refused message would have in Postgres.
 */
export const PROBE_STATEMENT = 'pgwarden\u0001refused';
/** Size of the buffers masked rows are written into (bytes). */
export const SCRATCH_BYTES = 256 * 1024;

/**
 * One message in this many (a power of two) has its time in pgwarden, and a Query its time upstream,
 * observed: a clock read (performance.now(), 0.1–0.5 µs) costs more than every counter together.
 */
const TIMING_SAMPLE = 16;

/** A simple-query probe: a syntax error, answered ErrorResponse + ReadyForQuery with no effect. */
export const PROBE_QUERY = 'pgwarden_refused';

function refusalFields(r: Refusal): ErrorFields {
  return {
    severity: 'ERROR',
    code: r.sqlstate,
    message: r.message,
    ...(r.detail ? { detail: r.detail } : {}),
    ...(r.hint ? { hint: r.hint } : {}),
    ...(r.position !== undefined ? { position: r.position } : {}),
  };
}

/**
 * The state one relay keeps (the queue of expected replies, prepared statements, portals, the
 * transaction status) and the steps the protocol's flows share, on top of `send` upstream
 * (UpstreamWriteRelay): refusals in place of a message (a probe upstream, then our ErrorResponse), the gate, the audit. The flows
 * build on it: in-band catalog reads, result replies, Simple Query, the extended protocol, the
 * upstream's replies, then `Relay` itself.
 */
export abstract class RelayCore extends UpstreamWriteRelay {
  protected readonly framer: MessageFramer;
  protected readonly expects = new Fifo<Expect>();
  /** Protocol-level prepared statements, counted against the memory budget while kept (issue 16 item 2). */
  protected readonly statements: RetainedMap<PreparedEntry>;
  protected readonly retained: RetainedStatements;
  protected readonly portals = new Map<string, PortalEntry>();
  /** Client messages waiting for the one being decided (decisions may await a catalog load). */
  protected readonly inbox = new Fifo<Frame>();
  protected working = false;
  /** After a refusal or error in an extended batch: drop client messages until Sync, as Postgres does. */
  protected skipping = false;
  /** After an origin mismatch: drop upstream replies until ReadyForQuery. */
  protected discarding = false;
  protected status: 'I' | 'T' | 'E' = 'I';
  protected batchOpen = false;
  protected closed = false;
  /** Allowed results of this session's gate, by text (the same statement again is not decided again). */
  protected readonly memo = new GateMemo();

  constructor(o: RelayOptions) {
    super(o);
    this.retained = o.retained ?? new RetainedStatements(o.memory);
    this.statements = this.retained.map((e: PreparedEntry) => retainedCost(e.sql, e.sent));
    this.framer = new MessageFramer({ maxMessageBytes: o.maxMessageBytes, startup: false });
    this.auditLines = o.audit.session({
      conn: o.connId,
      identity: o.identity,
      ...(o.viewer !== undefined ? { viewer: o.viewer } : {}),
      ...(o.login !== undefined ? { login: o.login } : {}),
      database: o.gateSession.database,
    });
  }

  /** Transactions ended so far (ReadyForQuery back to idle): a session's own catalog lives within one. */
  transactionsEnded = 0;
  /** Statements run to their CommandComplete, and refused (the wire console's SHOW STATS). */
  queries = 0;
  refused = 0;
  /** Time upstream of the statements run (µs). */
  queryTimeUs = 0;
  /** When the last statement ended or was refused (performance.now() ms); undefined before the first. */
  lastStatementAt: number | undefined;
  /** Messages gated so far, and when the last timed one was decided (0: it was not timed). */
  protected gates = 0;
  protected gatedAt = 0;

  /** Transaction status of the last ReadyForQuery. */
  get transactionStatus(): 'I' | 'T' | 'E' {
    return this.status;
  }

  /** True while replies are owed (a statement is running upstream). */
  get busy(): boolean {
    return this.expects.length > 0 || this.inbox.length > 0 || this.working;
  }

  /** Stops processing (the session is closing); what its prepared statements kept is given back. */
  stop(): void {
    this.closed = true;
    this.retained.close();
    this.o.fence?.close();
  }

  /** Set when the commit fence canceled this session's statement: its 57014 is reported as the fence's (commit-fence.ts). */
  fenceCanceled = false;

  /** OIDs of the relations named by the statements sent and not yet answered (the commit fence's view of this session). */
  inFlightRelations(): Set<number> {
    const out = new Set<number>();
    const add = (p: StatementPlan | null): void => {
      for (const b of p?.statement.bindings?.relations ?? []) if (b.kind === 'relation') out.add(b.oid);
    };
    this.expects.some((e) => {
      if (e.t === 'query') for (const p of e.plans) add(p);
      else if (e.t === 'execute' || e.t === 'describe') add(e.plan);
      else if (e.t === 'parse') add(e.entry.plan);
      return false;
    });
    return out;
  }

  /**
   * Whether every statement sent and not yet answered binds relations of pg_catalog or
   * information_schema only, and none of those schemas has another schema before it on the
   * session's search path (pg_catalog is searched first when the path does not name it; the
   * temporary schema is this session's own). A statement with no plan counts as not. Then no
   * relation the committing transaction of another session creates can take one of their names
   * upstream (commit-fence.ts: such a statement waiting on it is not canceled).
   */
  inFlightBindsOnlyCatalog(): boolean {
    const path = this.o.gateSession.paths.paths().searchPath;
    const before = (schema: string): boolean => {
      if (schema === 'pg_catalog' && !path.includes('pg_catalog')) return true;
      for (const s of path) {
        if (s === schema) return true;
        if (s !== 'pg_temp' && !s.startsWith('pg_temp_') && !CATALOG_SCHEMAS.has(s)) return false;
      }
      return false;
    };
    const only = (p: StatementPlan | null): boolean =>
      p !== null &&
      ((p.rows ?? p.statement).bindings?.relations ?? []).every(
        (b) => b.kind === 'relation' && CATALOG_SCHEMAS.has(b.schema) && before(b.schema),
      );
    let all = true;
    this.expects.some((e) => {
      if (e.t === 'query') all = e.plans.every(only);
      else if (e.t === 'execute' || e.t === 'describe') all = only(e.plan);
      else if (e.t === 'parse') all = only(e.entry.plan);
      return !all;
    });
    return all;
  }

  /** Set by {@link ignoreClient}: the client's further messages are dropped unread. */
  protected ignoringClient = false;
  /** SQLSTATE of the last ErrorResponse the upstream sent since {@link forgetLastError}. */
  lastErrorCode: string | undefined;

  /**
   * The session is ending (shutdown, issue 16 item 1): what the client sends from now on is
   * dropped, queued messages not yet sent are dropped too, and the client socket is paused.
   */
  ignoreClient(): void {
    this.ignoringClient = true;
    this.inbox.clear();
    this.o.client.pause();
  }

  /** Clears {@link lastErrorCode}. */
  forgetLastError(): void {
    this.lastErrorCode = undefined;
  }

  /** Resolves true once no replies are owed (polled every 10 ms), false after `timeoutMs`. */
  async idle(timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (this.busy && !this.closed) {
      if (Date.now() >= end) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    return !this.closed;
  }

  protected startBatch(): void {
    if (!this.batchOpen) {
      this.o.gateSession.paths.batchStarted(this.status);
      this.batchOpen = true;
    }
  }

  /** This session's audit lines (what its statements share serialized once). */
  private readonly auditLines: SessionAudit;

  private auditRefusal(sql: string, r: Refusal, statement: StatementAnalysis | undefined): void {
    const s = this.o.gateSession;
    const kind = auditKind(statement);
    statementRefused(kind, s.database, r);
    this.refused++;
    this.lastStatementAt = performance.now();
    this.auditLines.write(s.roles, s.paths.paths().searchPath, {
      kind,
      sql: normalizeForAudit(sql),
      decision: 'refused',
      reason: r.message,
      sqlstate: r.sqlstate,
      ...(r.rule ? { rule: `roles.${r.rule.role}.permissions[${r.rule.index}]` } : {}),
    });
  }

  /**
   * The audit line and the metrics of a statement that ran: `started` is when its message reached
   * pgwarden (for the audit's duration), `sent` when it went upstream (default `started`; 0 when its
   * Query was not timed, see TIMING_SAMPLE). Columns
   * masked at read (the rewrite masks them upstream) count as masked.
   */
  protected auditDone(
    plan: StatementPlan | null,
    sql: string,
    started: number,
    tag: string,
    sent = started,
  ): void {
    const s = this.o.gateSession;
    const fragment = plan
      ? planAudit(plan, sql)
      : auditFragment({ kind: auditKind(undefined), sql: normalizeForAudit(sql), decision: 'allowed' });
    const now = performance.now();
    const masked = fragment.fields.masked;
    statementRan(fragment.fields.kind, masked ? masked.length : 0, s.roles, sent > 0 ? now - sent : -1);
    this.queries++;
    this.queryTimeUs += (now - started) * 1000;
    this.lastStatementAt = now;
    this.auditLines.ran(
      s.roles,
      s.paths.paths().searchPath,
      fragment,
      Math.round((now - started) * 1000) / 1000,
      rowsOfTag(tag),
    );
  }

  /** Refuses a Query or FunctionCall: a syntax-error probe upstream, its ErrorResponse replaced by ours. */
  protected refuseSimple(r: Refusal): void {
    this.expects.push({ t: 'probe', error: errorResponse(refusalFields(r)), untilReady: true });
    this.send(encodeQuery(PROBE_QUERY));
  }

  /** Refuses an extended-protocol message: a failing Bind probe, then skip to Sync. */
  protected refuseExtended(r: Refusal): void {
    this.expects.push({ t: 'probe', error: errorResponse(refusalFields(r)), untilReady: false });
    this.send(encodeBind({ portal: '', statement: PROBE_STATEMENT }));
    this.skipping = true;
  }

  /**
   * Runs the gate for `sql` and hands its result to `allowed` (with `ctx`) or `refuse` — both
   * called as methods of this relay — synchronously when the gate could decide without waiting (a
   * loaded catalog: the hot path, where nothing is allocated for the continuation), else once it
   * has; what `allowed` returns (a string run in stages) is waited for too. A catalog that cannot
   * be read becomes a refusal (57P03 or 58000) passed to `refuse`.
   */
  protected withGate<C>(
    sql: string,
    ctx: C,
    allowed: (this: this, ctx: C, r: GateResult & { ok: true }) => Promise<void> | undefined | void,
    refuse: (this: this, r: Refusal) => void,
    utf8?: Buffer,
  ): Promise<void> | undefined {
    // One message in TIMING_SAMPLE is timed: a clock read costs more than the rest of the metrics.
    const begun = (++this.gates & (TIMING_SAMPLE - 1)) === 0 ? performance.now() : 0;
    let r: GateResult | Promise<GateResult>;
    try {
      r = gate(sql, this.o.gateSession, this.o.cache, this.o.decide, this.memo, utf8);
    } catch (e) {
      refuse.call(this, this.catalogFailure(e));
      return undefined;
    }
    if (!(r instanceof Promise)) return this.gated(sql, ctx, r, allowed, refuse, begun);
    // A commit fence raised while the gate waited (commit-fence.ts): its decision may be of the
    // catalog before that COMMIT, so it is made again once the fence is down.
    const epoch = this.o.fence?.epoch();
    return r.then(
      (x) => {
        if (epoch === this.o.fence?.epoch()) return this.gated(sql, ctx, x, allowed, refuse, begun);
        return (this.o.fence?.held() ?? Promise.resolve()).then(() =>
          this.withGate(sql, ctx, allowed, refuse, utf8),
        );
      },
      (e: unknown) => refuse.call(this, this.catalogFailure(e)),
    );
  }

  /**
   * The gate's result for `sql` when the session's memo holds it for the state now (gate-memo.ts):
   * the same value {@link withGate} would hand to `allowed`, timed and counted the same way, with
   * nothing awaited; undefined when it does not hold it, or the policy in force is not confirmed
   * (policyRefusal), or no catalog is loaded, or the memory budget refuses what it prepares
   * (then the general path decides, and refuses). Memoized results change no catalog and have no
   * session effect (GateMemo.keep), so no grant sync is waited for (gate's manageReady).
   */
  protected gateMemoized(sql: string): (GateResult & { ok: true }) | undefined {
    const s = this.o.gateSession;
    if (s.policyRefusal?.() !== undefined) return undefined;
    const now = s.catalogNow();
    if (!now) return undefined;
    const begun = (++this.gates & (TIMING_SAMPLE - 1)) === 0 ? performance.now() : 0;
    const r = this.memo.get(sql, s, now);
    if (!r || this.keepRefusal(r.plans)) return undefined;
    this.decided(begun);
    return r;
  }

  /** A decision begun at `begun` (performance.now(); 0: not timed) is made: observed, and {@link gatedAt} set. */
  private decided(begun: number): void {
    if (begun > 0) {
      const t = performance.now();
      decisionTime(t - begun);
      this.gatedAt = t;
    } else this.gatedAt = 0;
  }

  private gated<C>(
    sql: string,
    ctx: C,
    r: GateResult,
    allowed: (this: this, ctx: C, r: GateResult & { ok: true }) => Promise<void> | undefined | void,
    refuse: (this: this, r: Refusal) => void,
    begun: number,
  ): Promise<void> | undefined {
    this.decided(begun);
    const refusal = r.ok ? this.keepRefusal(r.plans) : r.refusal;
    if (!refusal) return allowed.call(this, ctx, r as GateResult & { ok: true }) ?? undefined;
    this.auditRefusal(sql, refusal, r.ok ? r.plans[0]?.statement : r.statement);
    refuse.call(this, refusal);
    return undefined;
  }

  /**
   * The refusal (53200) for plans whose SQL-level PREPAREs the session cannot keep within its
   * share of the memory budget (issue 16 item 2); undefined when they fit or prepare nothing.
   */
  protected keepRefusal(plans: readonly StatementPlan[]): Refusal | undefined {
    let more = 0;
    let units = 0;
    let name = '';
    for (const p of plans) {
      for (const e of p.effects) {
        if (e.kind !== 'prepare') continue;
        more += retainedBytes(p.statement.length);
        units += p.statement.length;
        name = e.name;
      }
    }
    if (more === 0 || this.retained.admits(more)) return undefined;
    return this.retained.refusal(`prepared statement "${name}"`, units);
  }

  /**
   * The refusal for a statement whose catalog cannot be read (issue 16): CatalogUnavailable's
   * 57P03 cannot_connect_now or 58000 system_error, never a connection-class 08xxx at ERROR
   * severity (pools read that as a dead connection). CatalogSource logs the failure once per
   * streak; anything else is logged here.
   */
  protected catalogFailure(e: unknown): Refusal {
    if (e instanceof CatalogUnavailable) {
      this.o.log.debug({ event: 'catalog-unavailable', code: e.sqlstate }, 'statement refused: no catalog');
      return { sqlstate: e.sqlstate, message: `${e.message}; the statement was not sent` };
    }
    this.o.log.error(
      { event: 'catalog-failed', err: (e as Error).message },
      'cannot read the upstream catalog',
    );
    return {
      sqlstate: '58000',
      message: 'pgwarden could not read the upstream catalog; the statement was not sent',
    };
  }
}

// The relay's shared state and the steps every flow uses: sending upstream, refusing, deciding, auditing.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { ResultRows } from '../catalog/read-catalog.js';
import { decisionTime, statementRan, statementRefused } from '../ops/metrics.js';
import type { Config } from '../policy/config-schema.js';
import type { Refusal } from '../policy/decision-types.js';
import { type RewrittenSql, sentUtf8 } from '../rewrite/rewrite-sql.js';
import type { StatementAnalysis } from '../sql/analysis-types.js';
import type { AnalysisCache } from '../sql/analyze.js';
import { EXTENDED_QUERY_MESSAGES, FrontendCode } from '../wire/codes.js';
import { type ErrorFields, errorResponse } from '../wire/error-fields.js';
import { type Frame, MessageFramer } from '../wire/framer.js';
import { bind as encodeBind, query as encodeQuery } from '../wire/frontend-encode.js';
import {
  type AuditFragment,
  type AuditLog,
  auditFragment,
  auditKind,
  rowsOfTag,
  type SessionAudit,
} from './audit.js';
import { normalizeForAudit } from './audit-normalize.js';
import { CatalogUnavailable } from './catalog-source.js';
import { sliceCodePoints } from './code-points.js';
import { GateMemo } from './gate-memo.js';
import type { GateSession } from './gate-session.js';
import type { MemoryBudget } from './memory-budget.js';
import { type RetainedMap, RetainedStatements, retainedBytes, retainedCost } from './retained-statements.js';
import { gate } from './statement-gate.js';
import type { Decider, GateResult, StatementPlan } from './statement-plan.js';
import type { UpstreamSession } from './upstream.js';

/** A bound portal: the plan of its statement and the statement's text (for the audit). */
export interface PortalEntry {
  readonly plan: StatementPlan | null;
  readonly sql: string;
}

/** A protocol-level prepared statement: its text and the plan decided for it, with what it was decided under. */
export interface PreparedEntry {
  readonly sql: string;
  readonly plan: StatementPlan | null;
  readonly pathVersion: number;
  readonly catalogVersion: number;
  /** The policy (Config value) it was decided under: a reload decides it again at Bind. */
  readonly policy: Config;
  /** The text prepared upstream (the rewritten one under mask at read). */
  readonly sent: string;
}

/**
 * The normalized audit text of a statement, computed once per analysis: an analysis is shared by
 * every text that differs only in literals (the analysis cache's normalized key), and literals are
 * exactly what normalization removes.
 */
const auditTexts = new WeakMap<object, string>();
function auditText(statement: StatementPlan['statement'], sql: string): string {
  let t = auditTexts.get(statement);
  if (t === undefined) {
    t = normalizeForAudit(sliceCodePoints(sql, statement.location, statement.length));
    auditTexts.set(statement, t);
  }
  return t;
}

/** The audit fields of each plan's executions (kind, text, decision, masked columns), serialized once. */
const planAudits = new WeakMap<StatementPlan, AuditFragment>();
/**
 * The audit fragment of a statement that ran under `plan` (`sql`: the text it came in): columns
 * masked at read (the rewrite masks them upstream) count as masked.
 */
function planAudit(plan: StatementPlan, sql: string): AuditFragment {
  let f = planAudits.get(plan);
  if (f === undefined) {
    const mask = plan.maskedAtRead ?? plan.mask;
    const masked =
      mask.size > 0 ? [...mask].map((i) => plan.statement.resultColumns[i]?.name ?? String(i)) : undefined;
    f = auditFragment({
      kind: auditKind(plan.statement),
      sql: auditText(plan.statement, sql),
      decision: masked ? 'masked' : 'allowed',
      ...(masked ? { masked } : {}),
    });
    planAudits.set(plan, f);
  }
  return f;
}

/**
 * Texts at least this long (UTF-16 code units) are not kept while their replies are awaited (see
 * {@link textToKeep}).
 */
const KEPT_TEXT_MAX = 64 * 1024;

/**
 * The text a reply entry keeps for the statements `plans` of `sql` until their CommandComplete:
 * `sql` itself when it is short or when a statement's effects read it (a PREPARE stores its text);
 * otherwise each statement's audit text is made now and '' is kept. A huge statement's text is
 * then not held while the upstream runs it: the memory budget is given back once its message has
 * been sent, and 24 sessions each held their 60 MB text meanwhile (issue 16 item 2).
 */
export function textToKeep(sql: string, plans: readonly StatementPlan[]): string {
  if (sql.length < KEPT_TEXT_MAX) return sql;
  if (plans.some((p) => p.effects.some((e) => e.kind === 'prepare'))) return sql;
  for (const p of plans) auditText(p.statement, sql);
  return '';
}

/**
 * Puts one entry of a map (prepared statements, portals) back as it was when this was made: for a
 * message the upstream refused or skipped, whose effect on the name therefore never happened.
 */
export class MapUndo {
  private readonly had: boolean;
  private readonly old: unknown;
  constructor(
    private readonly map: Map<string, unknown>,
    private readonly key: string,
  ) {
    this.had = map.has(key);
    this.old = map.get(key);
  }

  /** Restores the entry (or its absence). */
  run(): void {
    if (this.had) this.map.set(this.key, this.old);
    else this.map.delete(this.key);
  }
}

/** Replies the upstream owes us, in order (DESIGN.md "a queue of expected replies"). */
export type Expect =
  | {
      readonly t: 'query';
      readonly plans: readonly StatementPlan[];
      index: number;
      readonly sql: string;
      readonly started: number;
      /** When the Query went upstream (for the upstream duration); absent for a staged string's stages. */
      readonly sent?: number;
      /**
       * A stage of a string pgwarden runs in its own transaction: its ReadyForQuery is handed
       * here instead of to the client, unless this returns true.
       */
      readonly held?: (status: 'I' | 'T' | 'E') => boolean;
    }
  /** pgwarden's closing statement of a staged string: only its error and ReadyForQuery reach the client. */
  | { readonly t: 'finish' }
  | { readonly t: 'parse'; readonly entry: PreparedEntry; readonly undo: MapUndo }
  | { readonly t: 'bind'; readonly undo: MapUndo }
  | { readonly t: 'describe'; readonly plan: StatementPlan | null }
  | {
      readonly t: 'execute';
      readonly plan: StatementPlan | null;
      readonly sql: string;
      readonly started: number;
    }
  | { readonly t: 'close'; readonly undo: MapUndo }
  /** A Sync; `error` (ours, for a Sync sent with a payload) goes out before its ReadyForQuery. */
  | { readonly t: 'sync'; readonly error?: Buffer }
  /** pgwarden's own catalog read on this session: every reply is consumed here, none reaches the client. */
  | {
      readonly t: 'internal';
      readonly results: ResultRows[];
      fields: ((v: string) => unknown)[];
      names: string[];
      rows: Record<string, unknown>[];
      failed: boolean;
      readonly done: (r: ResultRows[] | null) => void;
    }
  /** A message we sent in place of a refused one, so the upstream's transaction fails as Postgres's would. */
  | { readonly t: 'probe'; readonly error: Buffer; readonly untilReady: boolean };

/** What the relay needs from its session. */
export interface RelayOptions {
  readonly client: net.Socket;
  readonly upstream: UpstreamSession;
  readonly log: Logger;
  readonly audit: AuditLog;
  readonly connId: number;
  readonly identity: string;
  /** The viewer the connection acts for (issue 8), when it names one. */
  readonly viewer?: string;
  /** The upstream login the session runs as (a set login under `roles: managed`), for the audit. */
  readonly login?: string;
  /**
   * True when the upstream login is a set login (issue 17): its 42501 is the second wall's refusal,
   * reported with pgwarden's message.
   */
  readonly secondWall?: boolean;
  readonly gateSession: GateSession;
  readonly cache: AnalysisCache;
  readonly decide: Decider;
  readonly invalidateCatalog: () => void;
  readonly maxMessageBytes: number;
  /** The proxy's budget for buffered large messages (issue 16 item 2); absent: nothing is counted. */
  readonly memory?: MemoryBudget;
  /**
   * The session's prepared statements as the budget counts them (issue 16 item 2; its SQL-level
   * ones are `gateSession.names.prepared`, made by it); absent: the protocol-level ones alone, by `memory`.
   */
  readonly retained?: RetainedStatements;
  /** Ends the session with a FATAL (or quietly). */
  readonly terminate: (fatal?: ErrorFields) => void;
  readonly onTransactionStatus: (status: 'I' | 'T' | 'E') => void;
}

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
 * transaction status) and the steps the protocol's flows share: `send` upstream, refusals in
 * place of a message (a probe upstream, then our ErrorResponse), the gate, the audit. The flows
 * build on it: in-band catalog reads, result replies, Simple Query, the extended protocol, the
 * upstream's replies, then `Relay` itself.
 */
export abstract class RelayCore {
  protected readonly framer: MessageFramer;
  protected readonly expects: Expect[] = [];
  /** Protocol-level prepared statements, counted against the memory budget while kept (issue 16 item 2). */
  protected readonly statements: RetainedMap<PreparedEntry>;
  protected readonly retained: RetainedStatements;
  protected readonly portals = new Map<string, PortalEntry>();
  /** Client messages waiting for the one being decided (decisions may await a catalog load). */
  protected readonly inbox: Frame[] = [];
  protected working = false;
  /** After a refusal or error in an extended batch: drop client messages until Sync, as Postgres does. */
  protected skipping = false;
  /** After an origin mismatch: drop upstream replies until ReadyForQuery. */
  protected discarding = false;
  protected status: 'I' | 'T' | 'E' = 'I';
  protected batchOpen = false;
  /** An extended-protocol message came since the last Sync: an implicit transaction may be open upstream. */
  protected extendedOpen = false;
  protected closed = false;
  /** Allowed results of this session's gate, by text (the same statement again is not decided again). */
  private readonly memo = new GateMemo();

  constructor(protected readonly o: RelayOptions) {
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
  private gates = 0;
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
    this.inbox.length = 0;
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

  /**
   * While set (the synchronous part of handling one client chunk), what is sent upstream and lies
   * right after the previous message in the same chunk is only appended to `run`: messages
   * forwarded as they came leave as one view of the client's bytes, one write (issue 18).
   */
  protected coalescing = false;
  private run: Buffer | undefined;
  private runEnd = 0;

  protected send(bytes: Buffer): void {
    // What went up decides whether an implicit extended-protocol transaction is open there.
    const code = bytes[0] as number;
    if (code === FrontendCode.Sync) this.extendedOpen = false;
    else if (EXTENDED_QUERY_MESSAGES.has(code)) this.extendedOpen = true;
    const run = this.run;
    if (run && bytes.buffer === run.buffer && bytes.byteOffset === this.runEnd) {
      this.runEnd += bytes.length;
      return;
    }
    this.flushSent();
    if (!this.coalescing) {
      this.o.upstream.socket.write(bytes);
      return;
    }
    this.run = bytes;
    this.runEnd = bytes.byteOffset + bytes.length;
  }

  /**
   * Sends a message that carries a rewritten text (mask at read): `encoded` is the message made
   * with the text, or, for a text whose UTF-8 bytes the rewrite kept (rewrite-sql.ts sentUtf8),
   * the message made with an empty text, which is sent around those bytes: a huge text is not
   * copied once more into the message (issue 16 item 2). Output: nothing; the message went up.
   */
  protected sendWithText(sent: RewrittenSql, encode: (text: string) => Buffer): void {
    const body = sentUtf8(sent);
    if (!body) {
      this.send(encode(sent.text));
      return;
    }
    const empty = encode('');
    // Where the (empty) text's NUL is: after the code and the length, and for a Parse its name's NUL.
    const at = empty[0] === FrontendCode.Parse ? empty.indexOf(0, 5) + 1 : 5;
    const head = Buffer.from(empty.subarray(0, at));
    head.writeInt32BE(empty.length - 1 + body.length, 1);
    this.send(head);
    this.flushSent();
    const up = this.o.upstream.socket;
    up.write(body);
    up.write(empty.subarray(at));
  }

  /** Writes what {@link send} holds back; call before `coalescing` is cleared or the socket is used directly. */
  protected flushSent(): void {
    const run = this.run;
    if (!run) return;
    this.run = undefined;
    const length = this.runEnd - run.byteOffset;
    this.o.upstream.socket.write(
      length === run.length ? run : Buffer.from(run.buffer, run.byteOffset, length),
    );
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
    return r.then(
      (x) => this.gated(sql, ctx, x, allowed, refuse, begun),
      (e: unknown) => refuse.call(this, this.catalogFailure(e)),
    );
  }

  private gated<C>(
    sql: string,
    ctx: C,
    r: GateResult,
    allowed: (this: this, ctx: C, r: GateResult & { ok: true }) => Promise<void> | undefined | void,
    refuse: (this: this, r: Refusal) => void,
    begun: number,
  ): Promise<void> | undefined {
    if (begun > 0) {
      const t = performance.now();
      decisionTime(t - begun);
      this.gatedAt = t;
    } else this.gatedAt = 0;
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

// The relay after start-up: every client message decided before it is sent, every reply checked and masked.
import type net from 'node:net';
import pg from 'pg';
import type { Logger } from 'pino';
import { buildCatalog, CATALOG_READS, type ResultRows } from '../catalog/read-catalog.js';
import type { Catalog } from '../catalog/types.js';
import type { Refusal } from '../policy/decision-types.js';
import { seesEverything } from '../policy/hidden-columns.js';
import type { AnalysisCache } from '../sql/analyze.js';
import {
  decodeCommandComplete,
  decodeDataRow,
  decodeErrorResponse,
  decodeParameterStatus,
  decodeReadyForQuery,
  decodeRowDescription,
  type ErrorFields,
  errorResponse,
} from '../wire/backend.js';
import { BackendCode, FrontendCode } from '../wire/codes.js';
import { type Frame, MessageFramer } from '../wire/framer.js';
import {
  decodeBind,
  decodeClose,
  decodeDescribe,
  decodeExecute,
  decodeParse,
  decodeQuery,
} from '../wire/frontend.js';
import { bind as encodeBind, query as encodeQuery } from '../wire/frontend-encode.js';
import type { ProtocolError } from '../wire/protocol-error.js';
import { type AuditLog, normalizeForAudit, rowsOfTag } from './audit.js';
import { redactError } from './error-redaction.js';
import { maskDataRow, maskRowDescription, originMismatch } from './masking.js';
import {
  cursorPlan,
  type Decider,
  type GateResult,
  type GateSession,
  gate,
  type StatementPlan,
  sliceCodePoints,
} from './statement-gate.js';
import type { UpstreamSession } from './upstream.js';

/** A bound portal: the plan of its statement and the statement's text (for the audit). */
interface PortalEntry {
  readonly plan: StatementPlan | null;
  readonly sql: string;
}

/** A protocol-level prepared statement: its text and the plan decided for it, with what it was decided under. */
interface PreparedEntry {
  readonly sql: string;
  readonly plan: StatementPlan | null;
  readonly pathVersion: number;
  readonly catalogVersion: number;
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

/** Replies the upstream owes us, in order (DESIGN.md "a queue of expected replies"). */
type Expect =
  | {
      readonly t: 'query';
      readonly plans: readonly StatementPlan[];
      index: number;
      readonly sql: string;
      readonly started: number;
    }
  | { readonly t: 'parse'; readonly entry: PreparedEntry; readonly undo: () => void }
  | { readonly t: 'bind'; readonly undo: () => void }
  | { readonly t: 'describe'; readonly plan: StatementPlan | null }
  | {
      readonly t: 'execute';
      readonly plan: StatementPlan | null;
      readonly sql: string;
      readonly started: number;
    }
  | { readonly t: 'close'; readonly undo: () => void }
  | { readonly t: 'sync' }
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
  readonly gateSession: GateSession;
  readonly cache: AnalysisCache;
  readonly decide: Decider;
  readonly invalidateCatalog: () => void;
  readonly maxMessageBytes: number;
  /** Ends the session with a FATAL (or quietly). */
  readonly terminate: (fatal?: ErrorFields) => void;
  readonly onTransactionStatus: (status: 'I' | 'T' | 'E') => void;
}

/**
 * A statement name no client can send: Bind to it fails with 26000 at the upstream without side
 * effects (exec_bind_message looks the statement up before it creates a portal), which aborts
 * the upstream transaction exactly as the refused message would have in Postgres.
 */
const PROBE_STATEMENT = 'pgwarden\u0001refused';
/** Size of the buffers masked rows are written into (bytes). */
const SCRATCH_BYTES = 256 * 1024;

/** Extended-protocol messages that may open an implicit transaction until Sync. */
const EXTENDED: ReadonlySet<number> = new Set([
  FrontendCode.Parse,
  FrontendCode.Bind,
  FrontendCode.Describe,
  FrontendCode.Execute,
  FrontendCode.Close,
]);

/** A simple-query probe: a syntax error, answered ErrorResponse + ReadyForQuery with no effect. */
const PROBE_QUERY = 'pgwarden_refused';

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
 * Enforcement on the wire (DESIGN.md "On the wire", issue 5): Simple Query and the extended
 * protocol are decided before anything is sent; refusals become ErrorResponse with the upstream's
 * transaction failed the same way; replies are masked, checked against the predicted origins, and
 * errors redacted; SQL-level and protocol-level prepared statements, portals and cursors carry
 * their plans. Original bytes are forwarded where nothing changes.
 */
export class Relay {
  private readonly framer: MessageFramer;
  private readonly expects: Expect[] = [];
  private readonly statements = new Map<string, PreparedEntry>();
  private readonly portals = new Map<string, PortalEntry>();
  /** Client messages waiting for the one being decided (decisions may await a catalog load). */
  private readonly inbox: Frame[] = [];
  private working = false;
  /** After a refusal or error in an extended batch: drop client messages until Sync, as Postgres does. */
  private skipping = false;
  /** After an origin mismatch: drop upstream replies until ReadyForQuery. */
  private discarding = false;
  private status: 'I' | 'T' | 'E' = 'I';
  private batchOpen = false;
  /** An extended-protocol message came since the last Sync: an implicit transaction may be open upstream. */
  private extendedOpen = false;
  private closed = false;

  /**
   * Memory for rewritten rows, handed out front to back and never reused: consecutive masked
   * rows land side by side, so they leave as one write (a queued write still holds its range).
   */
  private scratch = Buffer.alloc(0);
  private scratchAt = 0;
  private readonly carve = (bytes: number): Buffer => {
    if (this.scratchAt + bytes > this.scratch.length) {
      this.scratch = Buffer.allocUnsafe(Math.max(SCRATCH_BYTES, bytes));
      this.scratchAt = 0;
    }
    const out = this.scratch.subarray(this.scratchAt, this.scratchAt + bytes);
    this.scratchAt += bytes;
    return out;
  };

  constructor(private readonly o: RelayOptions) {
    this.framer = new MessageFramer({ maxMessageBytes: o.maxMessageBytes, startup: false });
  }

  /** Transactions ended so far (ReadyForQuery back to idle): a session's own catalog lives within one. */
  transactionsEnded = 0;

  /** Transaction status of the last ReadyForQuery. */
  get transactionStatus(): 'I' | 'T' | 'E' {
    return this.status;
  }

  /** True while replies are owed (a statement is running upstream). */
  get busy(): boolean {
    return this.expects.length > 0 || this.inbox.length > 0 || this.working;
  }

  /** Starts relaying both ways. */
  start(): void {
    const { client, upstream } = this.o;
    client.on('data', (chunk: Buffer) => this.fromClient(chunk));
    for (const f of upstream.pending) this.fromUpstreamFrames([f]);
    upstream.socket.on('data', (chunk: Buffer) => {
      let frames: Frame[];
      try {
        frames = upstream.framer.push(chunk);
      } catch (e) {
        this.o.log.error(
          { event: 'upstream-protocol', msg: (e as Error).message },
          'malformed message from upstream',
        );
        this.o.terminate({
          severity: 'FATAL',
          code: '08P01',
          message: 'lost synchronization with the upstream server',
        });
        return;
      }
      this.fromUpstreamFrames(frames);
    });
    upstream.socket.resume();
  }

  /**
   * Reads the catalog on this session's upstream connection (it alone sees the session's
   * uncommitted DDL and temporary tables): inside a transaction block within a savepoint that
   * is rolled back (so its `SET LOCAL search_path` leaves no trace), else in its own read-only
   * transaction. Resolves null when the connection is not free (replies owed, or a failed
   * transaction) or the read fails. `version` must be unique among catalogs (decision caches key on it).
   */
  readInBandCatalog(version: number): Promise<Catalog | null> {
    // Not when replies are owed, the transaction has failed, or an extended-protocol batch has an
    // implicit transaction open (neither BEGIN nor SAVEPOINT may start there).
    if (this.expects.length > 0 || this.status === 'E' || (this.extendedOpen && this.status === 'I')) {
      this.o.log.debug(
        { event: 'in-band-catalog', expects: this.expects.map((e) => e.t), status: this.status },
        'connection not free',
      );
      return Promise.resolve(null);
    }
    const inTx = this.status === 'T';
    // The catalog rows must be current: inside a REPEATABLE READ or SERIALIZABLE transaction the
    // reads would see the transaction's old snapshot, while Postgres resolves names and views with
    // a fresh catalog snapshot — a differential, so such a read is refused (isolation checked below).
    // statement_timeout is lifted for the read only (SET LOCAL, undone with the savepoint/COMMIT).
    const sql = inTx
      ? `SAVEPOINT pgwarden_catalog;SET LOCAL statement_timeout = 0;${CATALOG_READS}SELECT current_setting('transaction_isolation') AS iso;ROLLBACK TO SAVEPOINT pgwarden_catalog;RELEASE SAVEPOINT pgwarden_catalog;`
      : `BEGIN ISOLATION LEVEL READ COMMITTED, READ ONLY;SET LOCAL statement_timeout = 0;${CATALOG_READS}SELECT current_setting('transaction_isolation') AS iso;COMMIT;`;
    return new Promise((resolve) => {
      this.expects.push({
        t: 'internal',
        results: [],
        fields: [],
        names: [],
        rows: [],
        failed: false,
        done: (results) => {
          if (!results) {
            // A read that failed half-way leaves a transaction open (idle) or aborted (inside the
            // client's): put the session back as it was before answering.
            this.cleanUpInternal(inTx);
            return resolve(null);
          }
          try {
            const reads = results.slice(2, inTx ? -3 : -2);
            const iso = (results[results.length - (inTx ? 3 : 2)]?.rows[0] as { iso?: string } | undefined)
              ?.iso;
            if (iso !== 'read committed')
              throw new Error(`transaction isolation ${iso}: catalog rows would be stale`);
            resolve(buildCatalog(reads, version));
          } catch (e) {
            this.o.log.warn(
              { event: 'in-band-catalog', err: (e as Error).message },
              'in-band catalog read not used',
            );
            resolve(null);
          }
        },
      });
      this.send(encodeQuery(sql));
    });
  }

  /** After a failed in-band read: ROLLBACK (it was ours) or back to the savepoint (the client's transaction). */
  private cleanUpInternal(inTx: boolean): void {
    this.expects.push({
      t: 'internal',
      results: [],
      fields: [],
      names: [],
      rows: [],
      failed: false,
      done: () => {},
    });
    this.send(
      encodeQuery(
        inTx ? 'ROLLBACK TO SAVEPOINT pgwarden_catalog;RELEASE SAVEPOINT pgwarden_catalog;' : 'ROLLBACK;',
      ),
    );
  }

  /** Consumes a reply of pgwarden's own catalog read; returns true when it was one. */
  private internalReply(f: Frame): boolean {
    const head = this.expects[0];
    if (head?.t !== 'internal') return false;
    switch (f.code) {
      case BackendCode.RowDescription: {
        const fields = decodeRowDescription(f.payload);
        head.names = fields.map((x) => x.name);
        head.fields = fields.map((x) => pg.types.getTypeParser(x.typeOid, 'text') as (v: string) => unknown);
        head.rows = [];
        break;
      }
      case BackendCode.DataRow: {
        const cells = decodeDataRow(f.payload);
        const row: Record<string, unknown> = {};
        cells.forEach((c, i) => {
          row[head.names[i] as string] =
            c === null ? null : (head.fields[i] as (v: string) => unknown)(c.toString('utf8'));
        });
        head.rows.push(row);
        break;
      }
      case BackendCode.CommandComplete:
        head.results.push({ rows: head.rows });
        head.rows = [];
        head.names = [];
        head.fields = [];
        break;
      case BackendCode.ErrorResponse:
        head.failed = true;
        this.o.log.warn(
          { event: 'in-band-catalog', err: decodeErrorResponse(f.payload).message },
          'in-band catalog read failed',
        );
        break;
      case BackendCode.ReadyForQuery:
        this.expects.shift();
        head.done(head.failed ? null : head.results);
        break;
      default:
        break;
    }
    return true;
  }

  /** Stops processing (the session is closing). */
  stop(): void {
    this.closed = true;
  }

  // ---------------------------------------------------------------------------------------------
  // Client → upstream
  // ---------------------------------------------------------------------------------------------

  private fromClient(chunk: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.framer.push(chunk);
    } catch (e) {
      const err = e as ProtocolError;
      this.o.log.warn({ event: 'protocol-violation', msg: err.message }, 'malformed message from client');
      this.o.terminate({ severity: 'FATAL', code: err.sqlstate ?? '08P01', message: err.message });
      return;
    }
    this.inbox.push(...frames);
    if (!this.working) void this.drain();
  }

  /** Handles queued client messages one at a time, in order; pauses the client while deciding. */
  private async drain(): Promise<void> {
    this.working = true;
    const up = this.o.upstream.socket;
    // One cork for the whole batch: Parse/Bind/Execute/Sync decided without waiting leave as one write.
    up.cork();
    try {
      while (this.inbox.length > 0 && !this.closed) {
        const frame = this.inbox.shift() as Frame;
        const pending = this.handleClient(frame);
        if (pending) {
          // A catalog read (possibly on this very upstream connection) must not wait behind the cork.
          up.uncork();
          this.o.client.pause();
          await pending;
          this.o.client.resume();
          up.cork();
        }
      }
    } catch (e) {
      this.o.log.error({ event: 'relay-error', err: (e as Error).stack }, 'relay failed');
      this.o.terminate({ severity: 'FATAL', code: 'XX000', message: 'pgwarden internal error' });
    } finally {
      up.uncork();
      this.working = false;
    }
    if (up.writableNeedDrain) {
      this.o.client.pause();
      up.once('drain', () => this.o.client.resume());
    }
  }

  private send(bytes: Buffer): void {
    // What went up decides whether an implicit extended-protocol transaction is open there.
    const code = bytes[0] as number;
    if (code === FrontendCode.Sync) this.extendedOpen = false;
    else if (EXTENDED.has(code)) this.extendedOpen = true;
    this.o.upstream.socket.write(bytes);
  }

  /** One client message; returns a promise when it must wait for a decision. */
  private handleClient(f: Frame): Promise<void> | undefined {
    switch (f.code) {
      case FrontendCode.Query:
        if (this.skipping) return undefined;
        return this.simpleQuery(f);
      case FrontendCode.Parse:
        if (this.skipping) return undefined;
        return this.parse(f);
      case FrontendCode.Bind:
        if (this.skipping) return undefined;
        return this.bind(f);
      case FrontendCode.Describe:
        return this.skipping ? undefined : this.describe(f);
      case FrontendCode.Execute:
        return this.skipping ? undefined : this.execute(f);
      case FrontendCode.Close:
        if (!this.skipping) this.close(f);
        return undefined;
      case FrontendCode.Sync:
        this.skipping = false;
        this.startBatch();
        this.batchOpen = false;
        this.expects.push({ t: 'sync' });
        this.send(f.bytes);
        return undefined;
      case FrontendCode.Flush:
      case FrontendCode.CopyData:
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        this.send(f.bytes);
        return undefined;
      case FrontendCode.FunctionCall:
        this.startBatch();
        this.refuseSimple({
          sqlstate: '42501',
          message: 'the fast-path function call interface is not allowed through pgwarden',
        });
        return undefined;
      case FrontendCode.Terminate:
        this.o.upstream.socket.end(f.bytes);
        this.o.terminate();
        return undefined;
      default:
        this.o.terminate({
          severity: 'FATAL',
          code: '08P01',
          message: `invalid frontend message type ${f.code}`,
        });
        return undefined;
    }
  }

  private startBatch(): void {
    if (!this.batchOpen) {
      this.o.gateSession.paths.batchStarted(this.status);
      this.batchOpen = true;
    }
  }

  private auditRefusal(sql: string, r: Refusal, kind = 'UNKNOWN'): void {
    const s = this.o.gateSession;
    this.o.audit.write({
      conn: this.o.connId,
      identity: this.o.identity,
      ...(this.o.viewer !== undefined ? { viewer: this.o.viewer } : {}),
      roles: s.roles,
      database: s.database,
      kind,
      sql: normalizeForAudit(sql),
      decision: 'refused',
      reason: r.message,
      sqlstate: r.sqlstate,
      ...(r.rule ? { rule: `roles.${r.rule.role}.permissions[${r.rule.index}]` } : {}),
    });
  }

  private auditDone(plan: StatementPlan | null, sql: string, started: number, tag: string): void {
    const s = this.o.gateSession;
    const masked = plan ? [...plan.mask].map((i) => plan.statement.resultColumns[i]?.name ?? String(i)) : [];
    const rows = rowsOfTag(tag);
    this.o.audit.write({
      conn: this.o.connId,
      identity: this.o.identity,
      ...(this.o.viewer !== undefined ? { viewer: this.o.viewer } : {}),
      roles: s.roles,
      database: s.database,
      kind: plan?.statement.kind ?? 'UNKNOWN',
      sql: plan ? auditText(plan.statement, sql) : normalizeForAudit(sql),
      decision: masked.length > 0 ? 'masked' : 'allowed',
      ...(masked.length > 0 ? { masked } : {}),
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      ...(rows !== undefined ? { rows } : {}),
    });
  }

  /** Refuses a Query or FunctionCall: a syntax-error probe upstream, its ErrorResponse replaced by ours. */
  private refuseSimple(r: Refusal): void {
    this.expects.push({ t: 'probe', error: errorResponse(refusalFields(r)), untilReady: true });
    this.send(encodeQuery(PROBE_QUERY));
  }

  /** Refuses an extended-protocol message: a failing Bind probe, then skip to Sync. */
  private refuseExtended(r: Refusal): void {
    this.expects.push({ t: 'probe', error: errorResponse(refusalFields(r)), untilReady: false });
    this.send(encodeBind({ portal: '', statement: PROBE_STATEMENT }));
    this.skipping = true;
  }

  /**
   * Runs the gate for `sql` and hands its result to `then` — synchronously when the gate could
   * decide without waiting (a loaded catalog: the hot path), else once it has. A catalog that
   * cannot be read becomes a refusal (08006) passed to `onFailure`.
   */
  private withGate(
    sql: string,
    allowed: (r: GateResult & { ok: true }) => void,
    refuse: (r: Refusal) => void,
  ): Promise<void> | undefined {
    const then = (r: GateResult) => {
      if (r.ok) return allowed(r);
      this.auditRefusal(sql, r.refusal, r.statement?.kind);
      refuse(r.refusal);
    };
    let r: GateResult | Promise<GateResult>;
    try {
      r = gate(sql, this.o.gateSession, this.o.cache, this.o.decide);
    } catch (e) {
      refuse(this.catalogFailure(e));
      return undefined;
    }
    if (!(r instanceof Promise)) {
      then(r);
      return undefined;
    }
    return r.then(then, (e: unknown) => refuse(this.catalogFailure(e)));
  }

  private catalogFailure(e: unknown): Refusal {
    this.o.log.error(
      { event: 'catalog-failed', err: (e as Error).message },
      'cannot read the upstream catalog',
    );
    return {
      sqlstate: '08006',
      message: 'pgwarden cannot read the upstream catalog now; the statement was not sent',
    };
  }

  private simpleQuery(f: Frame): Promise<void> | undefined {
    const { sql } = decodeQuery(f.payload);
    this.startBatch();
    const started = performance.now();
    return this.withGate(
      sql,
      (result) => {
        this.expects.push({ t: 'query', plans: result.plans, index: 0, sql, started });
        this.send(f.bytes);
        this.batchOpen = false;
      },
      (r) => this.refuseSimple(r),
    );
  }

  private parse(f: Frame): Promise<void> | undefined {
    const { name, sql } = decodeParse(f.payload);
    this.startBatch();
    if (name === PROBE_STATEMENT) {
      this.refuseExtended({
        sqlstate: '42501',
        message: 'this prepared statement name is reserved by pgwarden',
      });
      return undefined;
    }
    return this.withGate(
      sql,
      (result) => {
        if (result.plans.length > 1) {
          this.refuseExtended({
            sqlstate: '42601',
            message: 'cannot insert multiple commands into a prepared statement',
          });
          return;
        }
        const entry: PreparedEntry = {
          sql,
          plan: result.plans[0] ?? null,
          pathVersion: this.o.gateSession.paths.version,
          catalogVersion: result.catalog.version,
        };
        // Pipelined Bind/Describe may follow before ParseComplete: the name exists from now on, and
        // is put back as it was if the upstream refuses the Parse (or skips it after an earlier error).
        this.expects.push({ t: 'parse', entry, undo: this.remember(this.statements, name) });
        this.statements.set(name, entry);
        this.o.gateSession.names.prepared.delete(name);
        this.send(f.bytes);
      },
      (r) => this.refuseExtended(r),
    );
  }

  /** The plan of a statement name: protocol-level first, then SQL-level PREPARE (one namespace in Postgres). */
  private statementPlan(name: string): { entry?: PreparedEntry; plan: StatementPlan | null } | undefined {
    const entry = this.statements.get(name);
    if (entry) return { entry, plan: entry.plan };
    return undefined;
  }

  private bind(f: Frame): Promise<void> | undefined {
    const b = decodeBind(f.payload);
    this.startBatch();
    const entry = this.statements.get(b.statement);
    if (!entry) {
      // SQL-level PREPAREd statements can be bound too; pgwarden refuses that path rather than
      // track a second decision for it, and an unknown name is Postgres's own 26000.
      const sqlLevel = this.o.gateSession.names.prepared.has(b.statement);
      this.refuseExtended({
        sqlstate: sqlLevel ? '0A000' : '26000',
        message: sqlLevel
          ? `binding the SQL-level prepared statement "${b.statement}" through the protocol is not supported by pgwarden; use EXECUTE`
          : `prepared statement "${b.statement}" does not exist`,
      });
      return undefined;
    }
    const bound = (e: PreparedEntry) => {
      this.expects.push({ t: 'bind', undo: this.remember(this.portals, b.portal) });
      this.portals.set(b.portal, { plan: e.plan, sql: e.sql });
      // Portals and SQL cursors are one namespace upstream.
      this.o.gateSession.names.cursors.delete(b.portal);
      this.send(f.bytes);
    };
    const current = this.o.gateSession.catalogNow();
    if (
      current &&
      entry.pathVersion === this.o.gateSession.paths.version &&
      entry.catalogVersion === current.version
    ) {
      bound(entry);
      return undefined;
    }
    // DESIGN.md: a decision made at Parse is made again at Bind when the search_path or the catalog changed.
    return this.withGate(
      entry.sql,
      (result) => {
        const again: PreparedEntry = {
          sql: entry.sql,
          plan: result.plans[0] ?? null,
          pathVersion: this.o.gateSession.paths.version,
          catalogVersion: result.catalog.version,
        };
        this.statements.set(b.statement, again);
        bound(again);
      },
      (r) => this.refuseExtended(r),
    );
  }

  /** An undo for a map entry: restores the value `key` has now (or its absence). */
  private remember<V>(map: Map<string, V>, key: string): () => void {
    const had = map.has(key);
    const old = map.get(key);
    return () => {
      if (had) map.set(key, old as V);
      else map.delete(key);
    };
  }

  /**
   * The portal entry for a name: a protocol portal, or a SQL cursor (one namespace upstream;
   * psycopg DECLAREs a cursor, then Describes its portal). A refusal when neither, or when the
   * cursor's statement is refused now.
   */
  private portalFor(name: string): PortalEntry | Refusal | Promise<PortalEntry | Refusal> {
    if (this.o.gateSession.names.cursors.has(name)) {
      return cursorPlan(name, this.o.gateSession, this.o.decide).then((plan) =>
        'sqlstate' in plan ? plan : { plan, sql: '' },
      );
    }
    return this.portals.get(name) ?? { sqlstate: '34000', message: `portal "${name}" does not exist` };
  }

  /** Runs `then` on the portal now, or once its cursor plan is decided (the rare, waiting case). */
  private withPortal(name: string, then: (p: PortalEntry) => void): Promise<void> | undefined {
    const found = this.portalFor(name);
    const go = (p: PortalEntry | Refusal) => {
      if ('sqlstate' in p) this.refuseExtended(p);
      else then(p);
    };
    if (found instanceof Promise) return found.then(go);
    go(found);
    return undefined;
  }

  private describe(f: Frame): Promise<void> | undefined {
    const d = decodeDescribe(f.payload);
    this.startBatch();
    if (d.target === 'S') {
      const found = this.statementPlan(d.name);
      if (!found) {
        this.refuseExtended({ sqlstate: '26000', message: `prepared statement "${d.name}" does not exist` });
        return undefined;
      }
      this.expects.push({ t: 'describe', plan: found.plan });
      this.send(f.bytes);
      return undefined;
    }
    return this.withPortal(d.name, (portal) => {
      this.expects.push({ t: 'describe', plan: portal.plan });
      this.send(f.bytes);
    });
  }

  private execute(f: Frame): Promise<void> | undefined {
    const e = decodeExecute(f.payload);
    this.startBatch();
    return this.withPortal(e.portal, (portal) => {
      this.expects.push({ t: 'execute', plan: portal.plan, sql: portal.sql, started: performance.now() });
      this.send(f.bytes);
    });
  }

  private close(f: Frame): void {
    const c = decodeClose(f.payload);
    this.startBatch();
    const map: Map<string, unknown> = c.target === 'S' ? this.statements : this.portals;
    // Close of a portal may close a SQL cursor of that name: it is forgotten too (fail closed).
    if (c.target === 'P') this.o.gateSession.names.cursors.delete(c.name);
    this.expects.push({ t: 'close', undo: this.remember(map, c.name) });
    map.delete(c.name);
    this.send(f.bytes);
  }

  // ---------------------------------------------------------------------------------------------
  // Upstream → client
  // ---------------------------------------------------------------------------------------------

  private fromUpstreamFrames(frames: readonly Frame[]): void {
    const out: Buffer[] = [];
    // Unchanged neighbours that were contiguous in one chunk go out as one view of it: the run is
    // tracked by offsets and becomes a Buffer once, not once per message.
    let run: Buffer | undefined;
    let runEnd = 0;
    for (const f of frames) {
      const b = this.onUpstream(f);
      if (b === null) continue;
      if (run && b.buffer === run.buffer && b.byteOffset === runEnd) {
        runEnd += b.length;
        continue;
      }
      if (run) out.push(Buffer.from(run.buffer, run.byteOffset, runEnd - run.byteOffset));
      run = b;
      runEnd = b.byteOffset + b.length;
    }
    if (run) out.push(Buffer.from(run.buffer, run.byteOffset, runEnd - run.byteOffset));
    if (out.length === 0) return;
    const client = this.o.client;
    // Runs are few: the chunk's unchanged messages, and masked rows side by side in scratch memory.
    if (out.length === 1) client.write(out[0] as Buffer);
    else if (out.length > 8) client.write(Buffer.concat(out));
    else {
      client.cork();
      for (const b of out) client.write(b);
      client.uncork();
    }
    if (client.writableNeedDrain) {
      this.o.upstream.socket.pause();
      client.once('drain', () => this.o.upstream.socket.resume());
    }
  }

  /** The bytes to send the client for one upstream message (null: nothing). */
  private onUpstream(f: Frame): Buffer | null {
    if (this.internalReply(f)) return null;
    switch (f.code) {
      case BackendCode.NoticeResponse:
      case BackendCode.NotificationResponse:
        return this.discarding ? null : f.bytes;
      case BackendCode.ParameterStatus:
        return this.parameterStatus(f);
      case BackendCode.ReadyForQuery:
        return this.readyForQuery(f);
      case BackendCode.ErrorResponse:
        return this.error(f);
      default:
        break;
    }
    const head = this.expects[0];
    if (!head) return f.bytes;
    const discarding = this.discarding;
    const out = this.reply(head, f);
    // The message that starts discarding (the refusal in place of a RowDescription) still goes out.
    return discarding ? null : out;
  }

  private parameterStatus(f: Frame): Buffer {
    const p = decodeParameterStatus(f.payload);
    const name = p.name.toLowerCase();
    if (
      (name === 'client_encoding' && p.value.toUpperCase() !== 'UTF8') ||
      (name === 'standard_conforming_strings' && p.value !== 'on')
    ) {
      // The parser would read the text differently from the server from now on (DESIGN.md).
      this.o.terminate({
        severity: 'FATAL',
        code: '42501',
        message: `${p.name} changed to ${p.value}: pgwarden reads SQL as UTF8 with standard_conforming_strings on and closes the session`,
      });
    }
    return f.bytes;
  }

  private readyForQuery(f: Frame): Buffer {
    // Everything owed before this ReadyForQuery has been answered or skipped; what a skipped
    // message would have created or closed never happened upstream, so it is put back.
    const undos: (() => void)[] = [];
    while (this.expects.length > 0) {
      const e = this.expects.shift() as Expect;
      if (e.t === 'sync' || e.t === 'query' || (e.t === 'probe' && e.untilReady)) break;
      if ('undo' in e) undos.push(e.undo);
    }
    for (const undo of undos.reverse()) undo();
    this.discarding = false;
    this.status = decodeReadyForQuery(f.payload);
    // Portals end with their transaction (holdable SQL cursors are tracked as cursors, not here).
    if (this.status === 'I') {
      this.portals.clear();
      this.transactionsEnded++;
    }
    this.o.gateSession.paths.ready(this.status);
    this.o.onTransactionStatus(this.status);
    return f.bytes;
  }

  /** An upstream ErrorResponse: ours instead for a probe, redacted where the statement touches hidden columns. */
  private error(f: Frame): Buffer | null {
    const head = this.expects[0];
    this.o.gateSession.paths.statementFailed();
    if (head?.t === 'probe') {
      if (!head.untilReady) this.expects.shift();
      return this.discarding ? null : head.error;
    }
    let plan: StatementPlan | null = null;
    if (head?.t === 'query') plan = head.plans[head.index] ?? null;
    else if (head && 'plan' in head) plan = head.plan;
    else if (head?.t === 'parse') plan = head.entry.plan;
    if (head && head.t !== 'query' && head.t !== 'sync') {
      // Extended protocol: the upstream skips to Sync; so do the replies we were owed, and what
      // the failed and skipped messages would have created or closed is put back.
      const undos: (() => void)[] = [];
      while (this.expects.length > 0 && this.expects[0]?.t !== 'sync') {
        const e = this.expects.shift() as Expect;
        if ('undo' in e) undos.push(e.undo);
      }
      for (const undo of undos.reverse()) undo();
      // Postgres now ignores every message until Sync. Messages the client sends from here on
      // (it may have seen the error after a Flush) are dropped here too, unless its Sync has
      // already gone up: only then does the upstream process what follows.
      if (!this.expects.some((e) => e.t === 'sync')) this.skipping = true;
    }
    if (this.discarding) return null;
    let redact = plan?.redact || (head?.t === 'query' && head.plans.some((p) => p.redact));
    const fields = decodeErrorResponse(f.payload);
    // A constraint failure or data exception may come from another table than the statement
    // names (a cascade, a trigger): its DETAIL or MESSAGE prints that row or value. A caller who
    // does not see everything gets neither, whatever the statement.
    if (!redact && (fields.code.startsWith('23') || fields.code.startsWith('22'))) {
      const g = this.o.gateSession;
      redact = !seesEverything(g.config, g.roles, g.database);
    }
    if (!redact) return f.bytes;
    if (fields.severity === 'FATAL' || fields.severity === 'PANIC') return f.bytes;
    return errorResponse(redactError(fields));
  }

  /** Replies that belong to the head of the queue. */
  private reply(head: Expect, f: Frame): Buffer | null {
    switch (head.t) {
      case 'query':
        return this.queryReply(head, f);
      case 'parse':
        if (f.code === BackendCode.ParseComplete) this.expects.shift();
        return f.bytes;
      case 'bind':
        if (f.code === BackendCode.BindComplete) this.expects.shift();
        return f.bytes;
      case 'describe':
        if (f.code === BackendCode.RowDescription) {
          this.expects.shift();
          return this.rowDescription(head.plan, f);
        }
        if (f.code === BackendCode.NoData) this.expects.shift();
        return f.bytes;
      case 'execute':
        return this.executeReply(head, f);
      case 'close':
        if (f.code === BackendCode.CloseComplete) this.expects.shift();
        return f.bytes;
      default:
        return f.bytes;
    }
  }

  private rowDescription(plan: StatementPlan | null, f: Frame): Buffer {
    if (!plan) return f.bytes;
    if (plan.origins) {
      const why = originMismatch(f.payload, plan.origins);
      if (why) {
        this.o.invalidateCatalog();
        this.o.log.warn({ event: 'origin-mismatch', why }, 'RowDescription disagrees with the analysis');
        const refusal = errorResponse({
          severity: 'ERROR',
          code: '42501',
          message: `pgwarden refused the result: ${why} (the schema changed since pgwarden read it)`,
          hint: 'Run the statement again: pgwarden has re-read the catalog.',
        });
        this.discarding = true;
        return refusal;
      }
    }
    return plan.mask.size > 0 ? maskRowDescription(f.payload, plan.mask) : f.bytes;
  }

  private dataRow(plan: StatementPlan | null, f: Frame): Buffer {
    return plan && plan.mask.size > 0 ? maskDataRow(f.bytes, plan.mask, this.carve) : f.bytes;
  }

  private completed(plan: StatementPlan | null, sql: string, started: number, tag: string): void {
    if (!plan) return;
    this.applyEffects(plan, sql);
    if (plan.changesCatalog) this.o.invalidateCatalog();
    this.auditDone(plan, sql, started, tag);
  }

  private applyEffects(plan: StatementPlan, sql: string): void {
    const names = this.o.gateSession.names;
    const paths = this.o.gateSession.paths;
    // The PREPARE is recorded under the path it was analyzed with, before this statement's own effects.
    const pathVersion = paths.version;
    paths.completed(plan.effects);
    for (const e of plan.effects) {
      switch (e.kind) {
        case 'prepare':
          names.prepared.set(e.name, {
            inner: e.inner,
            text: sliceCodePoints(sql, plan.statement.location, plan.statement.length),
            pathVersion,
            catalogVersion: plan.catalogVersion,
          });
          // Protocol-level and SQL-level prepared statements are one namespace upstream.
          this.statements.delete(e.name);
          break;
        case 'deallocate':
          if (e.name === null) names.prepared.clear();
          else names.prepared.delete(e.name);
          break;
        case 'declare-cursor':
          // Portals and cursors are one namespace upstream: the protocol portal of that name is gone.
          names.cursors.set(e.name, e.inner);
          this.portals.delete(e.name);
          break;
        case 'close-cursor':
          if (e.name === null) {
            names.cursors.clear();
            this.portals.clear();
          } else {
            names.cursors.delete(e.name);
            this.portals.delete(e.name);
          }
          break;
        case 'discard-all':
          names.prepared.clear();
          names.cursors.clear();
          this.statements.clear();
          this.portals.clear();
          break;
        default:
          break;
      }
    }
  }

  private queryReply(head: Expect & { t: 'query' }, f: Frame): Buffer | null {
    const plan = head.plans[head.index] ?? null;
    switch (f.code) {
      case BackendCode.RowDescription:
        return this.rowDescription(plan, f);
      case BackendCode.DataRow:
        return this.dataRow(plan, f);
      case BackendCode.CommandComplete:
        this.completed(plan, head.sql, head.started, decodeCommandComplete(f.payload));
        head.index++;
        return f.bytes;
      default:
        return f.bytes;
    }
  }

  private executeReply(head: Expect & { t: 'execute' }, f: Frame): Buffer | null {
    switch (f.code) {
      case BackendCode.DataRow:
        return this.dataRow(head.plan, f);
      case BackendCode.CommandComplete:
        this.completed(head.plan, head.sql, head.started, decodeCommandComplete(f.payload));
        this.expects.shift();
        return f.bytes;
      case BackendCode.EmptyQueryResponse:
      case BackendCode.PortalSuspended:
        this.expects.shift();
        return f.bytes;
      default:
        return f.bytes;
    }
  }
}

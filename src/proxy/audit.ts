// Audit lines: one per statement, with the normalized text (literals replaced, never the raw values).
import pino, { type Logger } from 'pino';
import type { StatementAnalysis } from '../sql/analysis-types.js';

/** One audit event (issue 5 "Audit"). Durations in milliseconds; `rows` from the CommandComplete tag. */
export interface AuditEvent {
  readonly conn: number;
  readonly identity: string;
  readonly viewer?: string;
  /** The upstream login the statement ran as: a set login `pgwarden_set_…` under `roles: managed`. */
  readonly login?: string;
  readonly roles: readonly string[];
  readonly database: string;
  /** The search_path the statement was analyzed under (what `pgwarden replay` analyzes it under again). */
  readonly searchPath?: readonly string[];
  readonly kind: string;
  readonly sql: string;
  readonly decision: 'allowed' | 'masked' | 'refused';
  readonly masked?: readonly string[];
  readonly reason?: string;
  readonly rule?: string;
  readonly sqlstate?: string;
  readonly durationMs?: number;
  readonly rows?: number;
}

/**
 * The audit `kind` of a statement: its kind as parsed (`SELECT`, `INSERT`, `UPDATE`, `DELETE`,
 * `MERGE`, `MANAGE`, `SESSION`), whether it ran or was refused; `FETCH`, `MOVE` and `EXECUTE` as
 * themselves (they read a cursor's or a prepared statement's rows, they are not session control
 * to an auditor); `UNPARSED` for a
 * string that did not parse into statements (a syntax error, 42601).
 */
export function auditKind(statement: StatementAnalysis | undefined): string {
  if (!statement) return 'UNPARSED';
  if (statement.nodeType === 'FetchStmt')
    return statement.sessionEffects.some((e) => e.kind === 'fetch' && e.move) ? 'MOVE' : 'FETCH';
  // An EXECUTE returns the rows of what it runs: named as itself, as FETCH is, not as SESSION.
  if (statement.nodeType === 'ExecuteStmt') return 'EXECUTE';
  return statement.kind;
}

/**
 * Writes audit events as pino lines tagged `audit: true` (a separate file when `audit.file` is set),
 * each stamped with the `epoch` of the policy in force (issue 19), when `epoch` is given.
 */
export class AuditLog {
  constructor(
    private readonly logger: Logger,
    private readonly epoch?: () => string,
  ) {}

  /** Logs one statement; `sql` must already be normalized. */
  write(e: AuditEvent): void {
    this.logger.info({ audit: true, ...e, ...(this.epoch ? { epoch: this.epoch() } : {}) }, 'statement');
  }

  /** The writer of one session's lines: what its statements share is serialized once (see SessionAudit). */
  session(fixed: SessionAuditFields): SessionAudit {
    return new SessionAudit(this.logger, fixed, this.epoch);
  }
}

/** The fields of an audit line that a session fixes at login. */
export type SessionAuditFields = Pick<AuditEvent, 'conn' | 'identity' | 'viewer' | 'login' | 'database'>;

/** The fields of an audit line that may change from one statement of a session to the next. */
export type StatementAuditFields = Omit<AuditEvent, keyof SessionAuditFields | 'roles' | 'searchPath'>;

/**
 * One session's audit lines, the same lines {@link AuditLog.write} writes (the same fields; the
 * session's own come first): the fields that change rarely (the session's, its roles, its
 * search_path, the policy epoch) are serialized once into a pino child logger, made again when
 * the roles, the path (by identity) or the epoch change; per statement only its own fields are
 * serialized (issue 18: the audit line amortized, every statement still audited). Where the logger
 * is a plain one (no mixin, hooks, log formatter, redaction, nested key or message prefix: what
 * makeAuditLogger makes), the line is put together here from pino's own pieces (its level string,
 * time, the child's serialized bindings, its line end) and handed to its destination: the bytes
 * pino would write, without its per-call machinery; otherwise pino writes it.
 */
export class SessionAudit {
  private child: Logger | undefined;
  /** The child's fixed pieces when the line can be put together here, else undefined. */
  private fast: FastLine | undefined;
  private roles: readonly string[] | undefined;
  private searchPath: readonly string[] | undefined;
  private epochNow: string | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly fixed: SessionAuditFields,
    private readonly epoch?: () => string,
  ) {}

  /** Logs one statement under `roles` and `searchPath`; `e.sql` must already be normalized. */
  write(roles: readonly string[], searchPath: readonly string[] | undefined, e: StatementAuditFields): void {
    const epoch = this.epoch?.();
    let child = this.child;
    if (!child || roles !== this.roles || searchPath !== this.searchPath || epoch !== this.epochNow) {
      const f = this.fixed;
      child = this.logger.child({
        audit: true,
        conn: f.conn,
        identity: f.identity,
        ...(f.viewer !== undefined ? { viewer: f.viewer } : {}),
        ...(f.login !== undefined ? { login: f.login } : {}),
        roles,
        database: f.database,
        ...(searchPath !== undefined ? { searchPath } : {}),
        ...(epoch !== undefined ? { epoch } : {}),
      });
      this.child = child;
      this.fast = fastLine(child);
      this.roles = roles;
      this.searchPath = searchPath;
      this.epochNow = epoch;
    }
    const fast = this.fast;
    if (fast && child.levelVal <= INFO) fast.stream.write(fast.line(e));
    else child.info(e, 'statement');
  }

  /**
   * Logs one statement that ran: the same line as {@link write} with `fragment`'s fields, then
   * `durationMs` and `rows` (when defined), the fragment's JSON written as serialized once.
   */
  ran(
    roles: readonly string[],
    searchPath: readonly string[] | undefined,
    fragment: AuditFragment,
    durationMs: number,
    rows: number | undefined,
  ): void {
    const child = this.child;
    const fast = this.fast;
    if (
      !child ||
      !fast ||
      roles !== this.roles ||
      searchPath !== this.searchPath ||
      this.epoch?.() !== this.epochNow ||
      child.levelVal > INFO
    ) {
      this.write(roles, searchPath, {
        ...fragment.fields,
        durationMs,
        ...(rows !== undefined ? { rows } : {}),
      });
      return;
    }
    fast.stream.write(fast.ran(fragment.json, durationMs, rows));
  }
}

/**
 * The fields of a statement's audit line that are the same at every execution of it (its kind,
 * normalized text, decision, masked columns), with their JSON (`,"kind":…` in that order) made
 * once: a plan's executions share one (issue 18).
 */
export interface AuditFragment {
  readonly fields: Pick<StatementAuditFields, 'kind' | 'sql' | 'decision' | 'masked'>;
  readonly json: string;
}

/** The fragment of `fields` (`sql` already normalized; `masked` left out when undefined). */
export function auditFragment(fields: AuditFragment['fields']): AuditFragment {
  const f = {
    kind: fields.kind,
    sql: fields.sql,
    decision: fields.decision,
    ...(fields.masked !== undefined ? { masked: fields.masked } : {}),
  };
  let json = '';
  for (const [key, v] of Object.entries(f)) json += `,"${key}":${JSON.stringify(v)}`;
  return { fields: f, json };
}

/** pino's level number of `info`. */
const INFO = 30;

/** What an audit line is put together from when pino's per-call work can be skipped. */
interface FastLine {
  readonly stream: { write(s: string): unknown };
  readonly line: (e: StatementAuditFields) => string;
  /** The line of a statement that ran, from its fragment's JSON. */
  readonly ran: (fragment: string, durationMs: number, rows: number | undefined) => string;
}

/** A number as pino writes it (non-finite: null). */
const num = (v: number): string => (Number.isFinite(v) ? String(v) : 'null');

/**
 * The pieces of `logger`'s lines at `info` (pino.symbols, pino 9), when its lines are plain JSON of
 * the fields as given: undefined when anything would change them (a mixin, a streamWrite hook, a
 * log formatter, redaction or custom stringifiers, a serializer for an audit field, a nested key,
 * another message key, a message prefix, a destination that wants metadata).
 */
function fastLine(logger: Logger): FastLine | undefined {
  const sym = pino.symbols;
  const l = logger as unknown as Record<symbol, unknown>;
  const stream = l[sym.streamSym] as ({ write(s: string): unknown } & Record<symbol, unknown>) | undefined;
  const hooks = l[sym.hooksSym] as { streamWrite?: unknown } | undefined;
  const formatters = l[sym.formattersSym] as { log?: unknown } | undefined;
  const stringifiers = l[sym.stringifiersSym] as object | undefined;
  const serializers = (l[sym.serializersSym] ?? {}) as Record<string, unknown>;
  const lsCache = l[sym.lsCacheSym] as Record<number, string> | undefined;
  const time = l[sym.timeSym] as (() => string) | undefined;
  const chindings = l[sym.chindingsSym];
  const end = l[sym.endSym];
  if (
    !stream ||
    typeof stream.write !== 'function' ||
    stream[sym.needsMetadataGsym] === true ||
    l[sym.mixinSym] ||
    hooks?.streamWrite ||
    formatters?.log ||
    (stringifiers &&
      (Object.keys(stringifiers).length > 0 || Object.getOwnPropertySymbols(stringifiers).length > 0)) ||
    AUDIT_FIELDS.some((k) => serializers[k] !== undefined) ||
    l[sym.nestedKeySym] ||
    l[sym.messageKeySym] !== 'msg' ||
    // Not in pino's typings; undefined (never a prefix) on a pino without it.
    ((sym as Record<string, symbol>).msgPrefixSym &&
      l[(sym as Record<string, symbol>).msgPrefixSym as symbol]) ||
    typeof lsCache?.[INFO] !== 'string' ||
    typeof time !== 'function' ||
    typeof chindings !== 'string' ||
    typeof end !== 'string'
  )
    return undefined;
  const head = lsCache[INFO] as string;
  const tail = `,"msg":"statement"${end}`;
  return {
    stream,
    line: (e) => {
      let props = '';
      for (const key in e) {
        const v = (e as Record<string, unknown>)[key];
        if (v === undefined) continue;
        props += `,"${key}":${typeof v === 'number' ? num(v) : JSON.stringify(v)}`;
      }
      return `${head}${time.call(logger)}${chindings}${props}${tail}`;
    },
    ran: (fragment, durationMs, rows) =>
      `${head}${time.call(logger)}${chindings}${fragment},"durationMs":${num(durationMs)}${
        rows !== undefined ? `,"rows":${num(rows)}` : ''
      }${tail}`,
  };
}

/** The keys of {@link StatementAuditFields} (none may have a pino serializer for the fast line). */
const AUDIT_FIELDS = [
  'kind',
  'sql',
  'decision',
  'masked',
  'reason',
  'rule',
  'sqlstate',
  'durationMs',
  'rows',
] as const satisfies readonly (keyof StatementAuditFields)[];

/** Rows from a CommandComplete tag: `SELECT 5`, `INSERT 0 3`, `UPDATE 2`, `COPY 10` → the last number. */
export function rowsOfTag(tag: string): number | undefined {
  const m = / (\d+)$/.exec(tag);
  return m ? Number(m[1]) : undefined;
}

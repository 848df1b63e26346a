// Audit lines: one per statement, with the normalized text (literals replaced, never the raw values).
import pino, { type Logger } from 'pino';
import type { StatementAnalysis } from '../sql/analysis-types.js';

/** A literal's place in the scanner's output, numbered once the highest parameter of the text is known. */
const LITERAL = '\u0000';

/**
 * Words after which a string constant is an operand, not a typed literal (`type 'text'`): SQL
 * keywords that precede an expression.
 */
const EXPRESSION_KEYWORDS = new Set(
  `and or not like ilike similar is in then else when select where on by values returning set as escape distinct
   from between all any some case limit offset having using to with into array row return
   elsif if do raise perform`.split(/\s+/),
);

/**
 * Replaces every literal of a SQL text by a numbered placeholder (`$1`, `$2`, … after the highest
 * parameter the text already has, as pg_stat_statements numbers them), so that the text parses again
 * for `pgwarden replay` and never holds a value (issue 19): string constants ('…', E'…', U&'…',
 * B'…', X'…'), dollar-quoted strings and numbers. A typed literal (`interval '1 day'`) becomes a
 * cast of its placeholder (`$1::interval`). Comments are dropped; identifiers and keywords stay.
 * A text this scanner cannot end cleanly (an unterminated quote) is logged as `[unterminated]`
 * rather than risk printing a value. Output: the normalized text, whitespace collapsed.
 */
export function normalizeForAudit(sql: string): string {
  let maxParam = 0;
  let cut = false;
  const marked = markLiterals(
    sql,
    (n) => {
      if (n > maxParam) maxParam = n;
    },
    () => {
      cut = true;
    },
  );
  if (marked === undefined) return '[unterminated]';
  let k = maxParam;
  const normalized = marked
    .replace(
      /\u0000(?:::([A-Za-z_][A-Za-z0-9_]*))?/g,
      (_m, type: string | undefined) => `$${++k}${type ? `::${type}` : ''}`,
    )
    .replace(/\s+/g, ' ')
    .trim();
  return cut ? `${normalized} [truncated: ${sql.length} characters in all]` : normalized;
}

/** Words that end an ORDER BY / GROUP BY item (what may follow an ordinal such as `ORDER BY 2`). */
const AFTER_ORDINAL =
  /^\s*(?:$|[,);]|(?:asc|desc|nulls|limit|offset|fetch|for|union|intersect|except|window|having|returning)\b)/i;
/** Words that end a sort or grouping list at its own depth (a comma after them starts no item of it). */
const ENDS_SORT_LIST =
  /\b(?:limit|offset|fetch|for|union|intersect|except|window|having|returning|select|from|where)\b/i;

/**
 * Whether the integer at `sql[i, end)` is an ordinal, a position in the select list (`ORDER BY 2`,
 * `GROUP BY 1, 2`): PostgreSQL resolves it to a column (parse_clause.c findTargetlistEntrySQL92),
 * so it is structure, not a value, and pg_stat_statements leaves it in the text too. `out` is the
 * scan's output so far (literals already marked). An item after a comma counts only when the list's
 * ORDER BY / GROUP BY is at the same parenthesis depth with no clause word since; anything less
 * clear is marked as a literal (the safe side: a value never printed).
 */
function isOrdinal(sql: string, end: number, out: string): boolean {
  if (!AFTER_ORDINAL.test(sql.slice(end, end + 16))) return false;
  if (/\b(?:order|group)\s+by\s*$/i.test(out)) return true;
  if (!/,\s*$/.test(out)) return false;
  let by = -1;
  for (const m of out.matchAll(/\b(?:order|group)\s+by\b/gi)) by = m.index + m[0].length;
  if (by < 0) return false;
  const list = out.slice(by);
  if (ENDS_SORT_LIST.test(list) || list.includes(';')) return false;
  let depth = 0;
  for (const c of list) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

/**
 * Where the audit's scan of a statement stops (UTF-16 code units of its output, each literal one
 * mark before its placeholder is numbered); the line then says it was cut. A 60 MB statement of
 * names was scanned whole into a 2 GB string chain outside the memory budget, for 30 s (issue 16
 * item 2). Placeholders of literals after the cut
 * are not numbered, so a cut text's parameters may differ from the whole's.
 */
export const AUDIT_TEXT_MAX = 16 * 1024;

/**
 * The scan of {@link normalizeForAudit}: literals as LITERAL marks; undefined when unterminated.
 * Stops between tokens once the output is longer than {@link AUDIT_TEXT_MAX} (`cut` is called).
 */
function markLiterals(sql: string, param: (n: number) => void, cut: () => void): string | undefined {
  let out = '';
  let i = 0;
  const n = sql.length;
  while (i < n) {
    if (out.length > AUDIT_TEXT_MAX) {
      cut();
      break;
    }
    const ch = sql[i] as string;
    const next = sql[i + 1];
    if (ch === '-' && next === '-') {
      while (i < n && sql[i] !== '\n') i++;
      out += ' ';
      continue;
    }
    if (ch === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < n && depth > 0) {
        if (sql[i] === '/' && sql[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
        } else i++;
      }
      if (depth > 0) return undefined;
      out += ' ';
      continue;
    }
    if (ch === '"') {
      let j = i + 1;
      for (;;) {
        const k = sql.indexOf('"', j);
        if (k < 0) return undefined;
        if (sql[k + 1] === '"') j = k + 2;
        else {
          j = k + 1;
          break;
        }
      }
      out += sql.slice(i, j);
      i = j;
      continue;
    }
    // A string constant: every quote starts one, whatever precedes it (E'…', U&'…', B'…', X'…',
    // N'…', and typed literals such as text'…' or interval'…'). Only an E prefix — a lone e
    // before the quote, not the end of a longer name — makes backslashes escapes.
    if (ch === "'") {
      const prev = sql[i - 1] ?? '';
      const beforePrev = sql[i - 2] ?? '';
      const backslashes = (prev === 'e' || prev === 'E') && !/[A-Za-z0-9_$]/.test(beforePrev);
      let j = i + 1;
      for (;;) {
        if (j >= n) return undefined;
        const c = sql[j];
        if (!backslashes && c !== "'") {
          // No escapes: jump to the next quote (one native search, not a loop per character).
          const q = sql.indexOf("'", j);
          j = q < 0 ? n : q;
        } else if (backslashes && c === '\\') j += 2;
        else if (c === "'" && sql[j + 1] === "'") j += 2;
        else if (c === "'") {
          j++;
          break;
        } else j++;
      }
      out = typedLiteral(out);
      i = j;
      continue;
    }
    if (ch === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag && (i === 0 || !/[A-Za-z0-9_]/.test(sql[i - 1] as string))) {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        if (end < 0) return undefined;
        out += LITERAL;
        i = end + tag[0].length;
        continue;
      }
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(next ?? ''))) {
      if (i > 0 && /[A-Za-z_$]/.test(sql[i - 1] as string)) {
        if (sql[i - 1] === '$' && !/[A-Za-z0-9_]/.test(sql[i - 2] ?? ''))
          param(Number(/^\d+/.exec(sql.slice(i))?.[0]));
        out += ch;
        i++;
        continue;
      }
      const num =
        /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][+-]?[0-9]+)?)/.exec(
          sql.slice(i),
        );
      const len = num?.[0].length || 1;
      const text = sql.slice(i, i + len);
      out += /^[0-9]+$/.test(text) && isOrdinal(sql, i + len, out) ? text : LITERAL;
      i += len;
      continue;
    }
    out += ch;
    i++;
  }
  return out;
}

/**
 * Appends a string literal's mark to `out`: as `LITERAL::type` in place of a type name right before
 * it (`date '2024-01-01'`, `interval '1 day'`), else plainly.
 */
function typedLiteral(out: string): string {
  // Only the end of `out` is read (a regex over all of it per literal was quadratic in the text).
  // The prefix of E'…', B'…', X'…', N'…' and U&'…' is part of the constant.
  const prefix = /(?:^|[^A-Za-z0-9_$])([EeBbXxNn]|[Uu]&)$/.exec(out.slice(-3));
  if (prefix?.[1] !== undefined) return out.slice(0, out.length - prefix[1].length) + LITERAL;
  // The last word before trailing whitespace: a run of [A-Za-z0-9_] without its leading digits.
  let end = out.length;
  while (end > 0 && /\s/.test(out[end - 1] as string)) end--;
  let start = end;
  while (start > 0 && /[A-Za-z0-9_]/.test(out[start - 1] as string)) start--;
  while (start < end && /[0-9]/.test(out[start] as string)) start++;
  const word = start < end ? out.slice(start, end) : undefined;
  if (word === undefined || EXPRESSION_KEYWORDS.has(word.toLowerCase()) || /[."]/.test(out[start - 1] ?? ''))
    return out + LITERAL;
  return `${out.slice(0, start)}${LITERAL}::${word}`;
}

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
 * `MERGE`, `MANAGE`, `SESSION`), whether it ran or was refused; `FETCH` and `MOVE` as themselves
 * (they read a cursor's rows, they are not session control to an auditor); `UNPARSED` for a
 * string that did not parse into statements (a syntax error, 42601).
 */
export function auditKind(statement: StatementAnalysis | undefined): string {
  if (!statement) return 'UNPARSED';
  if (statement.nodeType === 'FetchStmt')
    return statement.sessionEffects.some((e) => e.kind === 'fetch' && e.move) ? 'MOVE' : 'FETCH';
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

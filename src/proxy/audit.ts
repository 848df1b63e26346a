// Audit lines: one per statement, with the normalized text (literals replaced, never the raw values).
import type { Logger } from 'pino';
import type { StatementAnalysis } from '../sql/analysis-types.js';

/**
 * Replaces every literal of a SQL text by `?`: string constants ('…', E'…', U&'…', B'…', X'…'),
 * dollar-quoted strings and numbers; comments are dropped; identifiers and keywords stay.
 * A text this scanner cannot end cleanly (an unterminated quote) is logged as `[unterminated]`
 * rather than risk printing a value. Output: the normalized text, whitespace collapsed.
 */
export function normalizeForAudit(sql: string): string {
  let out = '';
  let i = 0;
  const n = sql.length;
  while (i < n) {
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
      if (depth > 0) return '[unterminated]';
      out += ' ';
      continue;
    }
    if (ch === '"') {
      let j = i + 1;
      for (;;) {
        const k = sql.indexOf('"', j);
        if (k < 0) return '[unterminated]';
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
        if (j >= n) return '[unterminated]';
        const c = sql[j];
        if (backslashes && c === '\\') j += 2;
        else if (c === "'" && sql[j + 1] === "'") j += 2;
        else if (c === "'") {
          j++;
          break;
        } else j++;
      }
      out += '?';
      i = j;
      continue;
    }
    if (ch === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag && (i === 0 || !/[A-Za-z0-9_]/.test(sql[i - 1] as string))) {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        if (end < 0) return '[unterminated]';
        out += '?';
        i = end + tag[0].length;
        continue;
      }
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(next ?? ''))) {
      if (i > 0 && /[A-Za-z_$]/.test(sql[i - 1] as string)) {
        out += ch;
        i++;
        continue;
      }
      const num =
        /^(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][+-]?[0-9]+)?)/.exec(
          sql.slice(i),
        );
      const len = num?.[0].length || 1;
      out += '?';
      i += len;
      continue;
    }
    out += ch;
    i++;
  }
  return out.replace(/\s+/g, ' ').trim();
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
}

/** Rows from a CommandComplete tag: `SELECT 5`, `INSERT 0 3`, `UPDATE 2`, `COPY 10` → the last number. */
export function rowsOfTag(tag: string): number | undefined {
  const m = / (\d+)$/.exec(tag);
  return m ? Number(m[1]) : undefined;
}

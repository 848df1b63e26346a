// Noninterference harness: runs statements through pgwarden against databases that differ only in hidden values and compares the answers.
import path from 'node:path';
import { loadModule, parseSync } from 'libpg-query';
import pino from 'pino';
import YAML from 'yaml';
import { DEMO_APP_PASSWORD, DEMO_DIR } from '../../src/embedded/demo.js';
import { parseConfig } from '../../src/policy/config-load.js';
import type { WallSwitches } from '../../src/policy/wall-switches.js';
import type { ProxyServer } from '../../src/proxy/proxy-port.js';
import { startProxy } from '../../src/proxy/server.js';
import { type Answer, AnswerSession, type Normalizer } from './client.js';
import { createNoninterferenceDatabases, dbName, HIDDEN, type PgServer, type Side } from './databases.js';

/** alice: analyst (SELECT, SEE but not on the hidden columns); bob: support (also INSERT, UPDATE). */
export type User = 'alice' | 'bob' | 'carol';
export const USERS: readonly User[] = ['alice', 'bob'];
/** carol sees everything: the harness's own sanity check (her answers must differ where hidden values show). */
export const SEER: User = 'carol';

/** How a statement is sent: one simple Query, or Parse/Bind/Describe/Execute/Sync asking text or binary results. */
export type Mode = 'simple' | 'extended-text' | 'extended-binary';

export interface Stmt {
  /** Where it comes from and which one: `corpus/analysis/ctes.yaml#cte-basic`, `generated#17`. */
  readonly id: string;
  readonly sql: string;
  readonly mode?: Mode;
}

/** What pgwarden did with a statement (from side a's answer): ran it, ran it masking, refused it, or PostgreSQL errored. */
export type Verdict = 'allowed' | 'masked' | 'refused' | 'error';

/**
 * same: identical answers; leak: the answers differ, reproducibly, and side c (a's values, loaded
 * separately) answers like a; nondeterministic: two runs on a differ; environment: a and c differ
 * (the answer depends on the database itself: xmin, pids of other sessions, …); flaky: the
 * difference did not reproduce when run again alone (concurrency, lock waits); tie-order: a LIMIT,
 * OFFSET or FETCH cut a result whose ORDER BY leaves ties, and which tied rows fall inside the cut
 * follows the sort algorithm Postgres picks, which follows the bytes sorted — hidden columns'
 * lengths among them (a coarse size channel, listed in the README; rows and counts still match);
 * timeout: one of the runs ended in the harness's own statement_timeout (57014), so the answers
 * compared are not both the statement's (a heavy statement near the 5 s bound on a loaded machine;
 * timing is a channel the README lists, not one this corpus measures). Printed, never silent.
 */
export type Kind = 'same' | 'leak' | 'nondeterministic' | 'environment' | 'flaky' | 'tie-order' | 'timeout';

export interface Outcome {
  readonly stmt: Stmt;
  readonly user: User;
  readonly verdict: Verdict;
  readonly kind: Kind;
  /** For a difference: the two answers' first differing lines. */
  readonly diff?: string;
  /** Wall time of the comparison (both sides, and the confirmation when there was one). */
  readonly ms: number;
}

/** A statement whose answers may legitimately be skipped for one user, with the reason printed. */
export interface Skip {
  readonly stmt: Stmt;
  readonly user: User;
  readonly reason: string;
}

/**
 * The proxy config: the two roles of the demo on the three databases, the hidden columns denied SEE;
 * `roles` is the databases' roles mode (issue 17: `managed` makes PostgreSQL the second wall).
 */
export function noninterferenceConfig(
  prefix: string,
  roles: 'single' | 'managed' = 'single',
): Record<string, unknown> {
  const dbs = (['a', 'b', 'c'] as const).map((s) => dbName(prefix, s));
  // `database: '*'`: one rule list for the three sides, so a refusal's DETAIL (which names the rule) reads alike.
  const rules = (actions: string[]) => [
    { effect: 'allow', actions, database: '*' },
    ...HIDDEN.map((h) => ({
      effect: 'deny',
      actions: ['SEE'],
      database: '*',
      schema: 'public',
      table: h.table,
      column: h.column,
    })),
  ];
  return {
    listen: '127.0.0.1:0',
    mode: 'proxified',
    demo: true,
    limits: { auth_failure_delay_ms: 10, shutdown_grace_ms: 2000, authentication_timeout_ms: 60_000 },
    databases: Object.fromEntries(
      dbs.map((d) => [
        d,
        {
          url: `postgres://pgwarden_app:\${PGWARDEN_UPSTREAM_PASSWORD}@127.0.0.1:\${PGWARDEN_UPSTREAM_PORT}/${d}`,
          roles,
        },
      ]),
    ),
    users: { alice: { password: 'alice' }, bob: { password: 'bob' }, carol: { password: 'carol' } },
    workspace_admins: [],
    default_role: null,
    roles: {
      analyst: { tenants: ['u/alice'], permissions: rules(['SELECT', 'SEE']) },
      support: { tenants: ['u/bob'], permissions: rules(['SELECT', 'INSERT', 'UPDATE', 'SEE']) },
      seer: {
        tenants: ['u/carol'],
        permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: '*' }],
      },
    },
  };
}

/** Readers run statements side by side; a confirmation runs alone. */
class RwLock {
  private readers = 0;
  private writer = false;
  private pendingWriters = 0;
  private waiters: (() => void)[] = [];
  private async wait(): Promise<void> {
    await new Promise<void>((r) => this.waiters.push(r));
  }
  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
  async shared<T>(f: () => Promise<T>): Promise<T> {
    while (this.writer || this.pendingWriters > 0) await this.wait();
    this.readers++;
    try {
      return await f();
    } finally {
      this.readers--;
      this.wake();
    }
  }
  async exclusive<T>(f: () => Promise<T>): Promise<T> {
    this.pendingWriters++;
    while (this.writer || this.readers > 0) await this.wait();
    this.pendingWriters--;
    this.writer = true;
    try {
      return await f();
    } finally {
      this.writer = false;
      this.wake();
    }
  }
}

/** The first differing line of two answers, with a little context. */
export function describeDiff(a: readonly string[], b: readonly string[]): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const cut = (s: string | undefined) =>
    s === undefined ? '(nothing)' : s.length > 400 ? `${s.slice(0, 400)}…` : s;
  return `line ${i}:\n    a: ${cut(a[i])}\n    b: ${cut(b[i])}`;
}

/** Transaction statements that end the writer's BEGIN … ROLLBACK (its writes would be committed): the writer skips them. */
const TX_END = new Set([
  'TRANS_STMT_COMMIT',
  'TRANS_STMT_ROLLBACK',
  'TRANS_STMT_PREPARE',
  'TRANS_STMT_COMMIT_PREPARED',
  'TRANS_STMT_ROLLBACK_PREPARED',
]);

/** Whether `sql` (as PostgreSQL 15 parses it) holds a statement that ends a transaction; unparsable text does not. */
function endsTransaction(sql: string): boolean {
  try {
    const tree = parseSync(sql) as { stmts?: { stmt?: { TransactionStmt?: { kind?: string } } }[] };
    return (tree.stmts ?? []).some((s) => TX_END.has(s.stmt?.TransactionStmt?.kind ?? ''));
  } catch {
    return false;
  }
}

/** Started proxy over freshly created databases, and the means to run statements through it. */
export class Harness {
  private readonly lock = new RwLock();
  private readonly norm: Normalizer;

  private constructor(
    readonly prefix: string,
    readonly proxy: ProxyServer,
  ) {
    const names = new RegExp(`\\b${prefix}_[abc]\\b`, 'g');
    this.norm = (s) =>
      s
        .replace(names, `${prefix}_?`)
        // EXPLAIN ANALYZE timings: clocks, not data.
        .replace(/actual time=[\d.]+\.\.[\d.]+/g, 'actual time=?')
        .replace(/(Planning|Execution) Time: [\d.]+ ms/g, '$1 Time: ? ms')
        .replace(
          /"(Actual Startup Time|Actual Total Time|Planning Time|Execution Time)": [\d.]+/g,
          '"$1": ?',
        );
  }

  /** Creates the databases on `server` and starts pgwarden in front of them. */
  static async start(
    server: PgServer,
    prefix: string,
    opts: { roles?: 'single' | 'managed'; walls?: WallSwitches } = {},
  ): Promise<Harness> {
    await loadModule();
    await createNoninterferenceDatabases(server, prefix);
    const env = {
      ...process.env,
      PGWARDEN_UPSTREAM_PORT: String(server.port),
      PGWARDEN_UPSTREAM_PASSWORD: DEMO_APP_PASSWORD,
    };
    const cfg = parseConfig(
      YAML.stringify(noninterferenceConfig(prefix, opts.roles)),
      path.join(DEMO_DIR, 'pgwarden.yaml'),
      env,
    );
    const logger = pino({ level: process.env.PGWARDEN_TEST_LOG ?? 'silent' });
    return new Harness(prefix, await startProxy(cfg, logger, opts.walls ? { walls: opts.walls } : {}));
  }

  async close(): Promise<void> {
    await this.proxy.close(500);
  }

  /** Why `user` does not run `stmt` (printed, never silent), or undefined. */
  skipReason(stmt: Stmt, user: User): string | undefined {
    if (user === 'bob' && endsTransaction(stmt.sql)) {
      return 'ends a transaction: the writer runs inside BEGIN … ROLLBACK, and this would commit its writes (alice runs it)';
    }
    return undefined;
  }

  /**
   * Runs every statement as each user on sides a and b with `workers` connections per side and user;
   * confirms and classifies each difference alone. `onOutcome` sees each outcome as it lands.
   */
  async run(
    stmts: readonly Stmt[],
    opts: { workers?: number; users?: readonly User[]; onOutcome?: (o: Outcome) => void } = {},
  ): Promise<{ outcomes: Outcome[]; skipped: Skip[] }> {
    const users = opts.users ?? USERS;
    const outcomes: Outcome[] = [];
    const skipped: Skip[] = [];
    let next = 0;
    const worker = async () => {
      const sessions = new Map<string, AnswerSession>();
      const session = async (user: User, side: Side): Promise<AnswerSession> => {
        const key = `${user}:${side}`;
        let s = sessions.get(key);
        if (!s || s.closed) {
          s = await AnswerSession.open(this.proxy.address.port, user, dbName(this.prefix, side), this.norm, {
            statement_timeout: '5s',
          });
          sessions.set(key, s);
        }
        return s;
      };
      try {
        for (;;) {
          const stmt = stmts[next++];
          if (!stmt) return;
          for (const user of users) {
            const why = this.skipReason(stmt, user);
            if (why) {
              skipped.push({ stmt, user, reason: why });
              continue;
            }
            const o = await this.one(stmt, user, session);
            outcomes.push(o);
            opts.onOutcome?.(o);
          }
        }
      } finally {
        for (const s of sessions.values()) s.close();
      }
    };
    await Promise.all(Array.from({ length: opts.workers ?? 3 }, worker));
    return { outcomes, skipped };
  }

  /** One statement as one user on fresh sessions (for shrinking a failure). */
  async single(stmt: Stmt, user: User): Promise<Outcome> {
    const sessions: AnswerSession[] = [];
    try {
      return await this.one(stmt, user, async (u, side) => {
        const s = await AnswerSession.open(this.proxy.address.port, u, dbName(this.prefix, side), this.norm, {
          statement_timeout: '5s',
        });
        sessions.push(s);
        return s;
      });
    } finally {
      for (const s of sessions) s.close();
    }
  }

  private async one(
    stmt: Stmt,
    user: User,
    session: (user: User, side: Side) => Promise<AnswerSession>,
  ): Promise<Outcome> {
    const t0 = Date.now();
    const exec = async (side: Side) => this.exec(await session(user, side), stmt, user);
    const [a, b] = await this.lock.shared(() => Promise.all([exec('a'), exec('b')]));
    const verdict = verdictOf(a.primary);
    if (same(a.lines, b.lines)) return { stmt, user, verdict, kind: 'same', ms: Date.now() - t0 };
    return await this.lock.exclusive(async () => {
      const a2 = await exec('a');
      const a3 = await exec('a');
      const b2 = await exec('b');
      const c2 = await exec('c');
      let kind: Kind;
      if ([a, b, a2, a3, b2, c2].some((r) => timedOut(r.lines))) kind = 'timeout';
      else if (!same(a2.lines, a3.lines)) kind = 'nondeterministic';
      else if (same(a2.lines, b2.lines)) kind = 'flaky';
      else if (!same(a2.lines, c2.lines)) kind = 'environment';
      else if (tieOrderOnly(stmt.sql, a2.lines, b2.lines)) kind = 'tie-order';
      else kind = 'leak';
      const diff =
        kind === 'nondeterministic'
          ? describeDiff(a2.lines, a3.lines)
          : kind === 'environment'
            ? describeDiff(a2.lines, c2.lines)
            : describeDiff(a.lines, b.lines);
      return { stmt, user, verdict, kind, diff, ms: Date.now() - t0 };
    });
  }

  /**
   * One run, sent as one pipeline: the writer's statement inside BEGIN … ROLLBACK; a statement that
   * may leave session state behind is followed by ROLLBACK and DISCARD ALL, so each starts afresh.
   */
  private async exec(
    s: AnswerSession,
    stmt: Stmt,
    user: User,
  ): Promise<{ lines: string[]; primary: Answer }> {
    const mode = stmt.mode ?? 'simple';
    const plain = statelessDml(stmt.sql);
    const parts = [
      ...(user === 'bob' ? [{ sql: 'BEGIN' }] : []),
      mode === 'simple'
        ? { sql: stmt.sql }
        : { sql: stmt.sql, extended: mode === 'extended-binary' ? (1 as const) : (0 as const) },
      ...(user === 'bob' || !plain ? [{ sql: 'ROLLBACK' }] : []),
      // DISCARD ALL makes pgwarden re-read state (slow): only after what may leave names or settings behind.
      ...(!plain && SESSION_STATE.test(stmt.sql) ? [{ sql: 'DISCARD ALL' }] : []),
    ] as const;
    const answers = await s.pipeline(parts);
    const primary = answers[user === 'bob' ? 1 : 0] ?? answers[answers.length - 1];
    if (!primary) throw new Error('no answer');
    return { lines: answers.flatMap((x, i) => [`-- ${i}`, ...x.lines]), primary };
  }
}

/** Statement kinds that leave no session state behind (unless a function does: see {@link STATEFUL_FUNCTIONS}). */
const STATELESS = new Set(['SelectStmt', 'InsertStmt', 'UpdateStmt', 'DeleteStmt', 'ExplainStmt']);
/** Words of statements that may leave session state (settings, prepared names, cursors, temp objects) behind. */
const SESSION_STATE =
  /\b(set|set_config|prepare|declare|listen|temp|temporary|reset|discard|load|lock|advisory|search_path)\b/i;
const STATEFUL_FUNCTIONS = /set_config|advisory|notify|listen|nextval|setval|currval|lastval|dblink|lo_/i;

/** Whether `sql` parses to plain reads and writes only, so the session needs no reset after it. */
function statelessDml(sql: string): boolean {
  if (STATEFUL_FUNCTIONS.test(sql)) return false;
  try {
    const tree = parseSync(sql) as { stmts?: { stmt?: Record<string, unknown> }[] };
    const stmts = tree.stmts ?? [];
    return stmts.length > 0 && stmts.every((x) => STATELESS.has(Object.keys(x.stmt ?? {})[0] ?? ''));
  } catch {
    return false;
  }
}

/**
 * True when a LIMIT/OFFSET/FETCH statement's answers differ only in which rows came back: the same
 * row descriptions, command tags (row counts), errors and notices, in the same places.
 */
function tieOrderOnly(sql: string, a: readonly string[], b: readonly string[]): boolean {
  if (!/\b(limit|offset|fetch)\b/i.test(sql) || !/\border\s+by\b/i.test(sql)) return false;
  const shape = (lines: readonly string[]) => lines.map((l) => (l.startsWith('D') ? 'D' : l));
  return same(shape(a), shape(b));
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** A pgwarden refusal carries no PostgreSQL source location; an upstream error does. */
export function verdictOf(a: Answer): Verdict {
  if (a.error) return a.error.file === undefined ? 'refused' : 'error';
  return a.masked ? 'masked' : 'allowed';
}

/** Totals of a run, for printing. */
export function summarize(outcomes: readonly Outcome[]): Record<Verdict | Kind, number> {
  const t: Record<Verdict | Kind, number> = {
    allowed: 0,
    masked: 0,
    refused: 0,
    error: 0,
    same: 0,
    leak: 0,
    nondeterministic: 0,
    environment: 0,
    flaky: 0,
    'tie-order': 0,
    timeout: 0,
  };
  for (const o of outcomes) {
    t[o.verdict]++;
    t[o.kind]++;
  }
  return t;
}

/** True when an answer ended in 57014 query_canceled (the harness's statement_timeout). */
function timedOut(lines: readonly string[]): boolean {
  return lines.some((l) => l.startsWith('E ') && l.includes('"code":"57014"'));
}

/** A printable report: totals, then every excluded and every leaking statement with its difference. */
export function report(title: string, outcomes: readonly Outcome[], skipped: readonly Skip[]): string {
  const t = summarize(outcomes);
  const lines = [
    `${title}: ${outcomes.length} runs (statement × user); allowed ${t.allowed}, masked ${t.masked}, refused ${t.refused}, errored upstream ${t.error}; same ${t.same}, leaks ${t.leak}, nondeterministic ${t.nondeterministic}, environment ${t.environment}, flaky ${t.flaky}, tie-order ${t['tie-order']}, timeout ${t.timeout}; skipped ${skipped.length}`,
  ];
  for (const k of ['nondeterministic', 'environment', 'flaky', 'tie-order', 'timeout', 'leak'] as const) {
    for (const o of outcomes.filter((x) => x.kind === k)) {
      lines.push(`  [${k}] ${o.user} ${o.stmt.id}${o.stmt.mode ? ` (${o.stmt.mode})` : ''}: ${o.stmt.sql}`);
      if (o.diff) lines.push(`    ${o.diff.replace(/\n/g, '\n    ')}`);
    }
  }
  const slow = [...outcomes].sort((x, y) => y.ms - x.ms).slice(0, 5);
  lines.push(`  slowest: ${slow.map((o) => `${o.ms} ms ${o.user} ${o.stmt.id}`).join('; ')}`);
  for (const s of skipped) lines.push(`  [skipped] ${s.user} ${s.stmt.id}: ${s.reason}`);
  return lines.join('\n');
}

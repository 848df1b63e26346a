// Decides a SQL string before any of it is sent: analysis, decision, and the plan of each statement.
import type { Catalog } from '../catalog/types.js';
import type { Config } from '../policy/config-schema.js';
import type { ConnectionKind, Decision, Refusal, StatementDecision } from '../policy/decision-types.js';
import type { WallSwitches } from '../policy/wall-switches.js';
import type { RewriteCache } from '../rewrite/rewrite-cache.js';
import type { RewrittenSql } from '../rewrite/rewrite-sql.js';
import type { Analysis, ColumnOrigin, SessionEffect, StatementAnalysis } from '../sql/analysis-types.js';
import type { AnalysisCache } from '../sql/analyze.js';
import { maskAtRead } from './gate-mask-at-read.js';
import type { GateMemo } from './gate-memo.js';
import type { SearchPathTracker } from './search-path-tracker.js';

/** decide() of src/policy (DESIGN.md "Decision"), injected so the proxy does not re-implement it. */
export type Decider = (
  analysis: Analysis,
  roles: readonly string[],
  ctx: {
    config: Config;
    connection: ConnectionKind;
    database: string;
    catalog: Catalog;
    seeChecks?: boolean;
    rewrite?: boolean;
  },
) => Decision;

/**
 * What the relay does with one statement's replies: which result columns to mask, whether to
 * redact errors, which RowDescription origins to expect, and the session effects to apply when
 * the statement completes.
 */
export interface StatementPlan {
  readonly statement: StatementAnalysis;
  /** 0-based result column indexes that come back as `*****`. */
  readonly mask: ReadonlySet<number>;
  /**
   * The result columns the decision masks, when the rewrite masks them upstream (mask at read) and
   * `mask` is empty: what the audit and the metrics report as masked.
   */
  readonly maskedAtRead?: ReadonlySet<number>;
  readonly redact: boolean;
  /** Predicted origins, one per result column, or null when the statement returns no rows we can predict. */
  readonly origins: readonly ColumnOrigin[] | null;
  readonly effects: readonly SessionEffect[];
  /** DDL and other MANAGE statements: the catalog is read again once they complete. */
  readonly changesCatalog: boolean;
  /** The version of the catalog the statement was analyzed with. */
  readonly catalogVersion: number;
  /**
   * Whether a RowDescription origin is a column hidden from the caller (mask at read: such a
   * column never arrives unmasked; one that does is refused, never sent). Absent: the caller
   * sees everything.
   */
  readonly hiddenOrigin?: (tableOid: number, attnum: number) => boolean;
  /**
   * How the text the statement went up in maps back to the caller's (errors about it are mapped
   * back): positions and generated names. Its `text` may be another text of the same lexical key
   * (a plan is shared by them, gate-memo.ts): the text sent is the GateResult's `sent`.
   */
  readonly sent?: Pick<RewrittenSql, 'positions' | 'names'>;
}

/**
 * The gate's answer for a whole string. `rest`, when set, is the part of the string the gate
 * could not decide yet because it uses what the decided part creates (issue 15): the text to
 * gate once `plans` have run inside the string's transaction, the decided part blanked out so
 * that positions stay those of the whole string.
 * `sent`: the rewritten text to send instead of `head` or the whole string (mask at read).
 */
export type GateResult =
  | {
      readonly ok: true;
      readonly plans: readonly StatementPlan[];
      readonly catalog: Catalog;
      /** With `rest`: the text to send now, the string up to where `rest` starts. */
      readonly head?: string;
      readonly rest?: string;
      readonly sent?: RewrittenSql;
    }
  | { readonly ok: false; readonly refusal: Refusal; readonly statement?: StatementAnalysis };

/**
 * A SQL-level prepared statement: its analysis, the PREPARE statement's own text, and the
 * search_path and catalog it was analyzed under. Postgres re-analyzes a prepared statement
 * when search_path or the objects it uses change, so EXECUTE re-analyzes it then too.
 */
export interface SqlPrepared {
  readonly inner: StatementAnalysis;
  readonly text: string;
  readonly pathVersion: number;
  readonly catalogVersion: number;
}

/** SQL-level PREPARE and DECLARE CURSOR: the inner statement a name stands for, kept by the session. */
export interface SqlNames {
  readonly prepared: Map<string, SqlPrepared>;
  readonly cursors: Map<string, StatementAnalysis>;
}

/** What the gate needs from the session. */
export interface GateSession {
  readonly config: Config;
  readonly roles: readonly string[];
  readonly database: string;
  readonly connection: ConnectionKind;
  readonly paths: SearchPathTracker;
  readonly names: SqlNames;
  /** The catalog to analyze with: the session's own in-band one when it has one, else the shared one (`refresh`: read anew). */
  readonly catalog: (refresh: boolean) => Promise<Catalog>;
  /** That catalog when it is loaded and current, without waiting; undefined when it must be read. */
  readonly catalogNow: () => Catalog | undefined;
  /**
   * Reads the catalog on the session's own upstream connection, which alone sees its
   * uncommitted DDL and its temporary tables; null when the connection is not free for it.
   */
  readonly inBandCatalog: () => Promise<Catalog | null>;
  /** Rewritten texts of the server (mask at read), shared by its sessions. */
  readonly rewrites?: RewriteCache;
  /** Test-only wall switches (policy/wall-switches.ts); absent: every wall on. */
  readonly walls?: WallSwitches;
  /**
   * The refusal while the instance's policy lags the store past the bound (issue 21, 57P03), else
   * undefined; absent: the policy is the config file's, never stale.
   */
  readonly policyRefusal?: () => Refusal | undefined;
}

/** SQLSTATEs of analysis refusals that a fresher catalog may cure (issue 5: analysis runs once more). */
const STALE_CATALOG = new Set(['42P01', '42703', '42883', '3F000', '42704']);

function analysisRefusal(a: Analysis): Refusal | undefined {
  const r = a.refusal;
  if (!r) return undefined;
  return {
    sqlstate: r.sqlstate,
    message: r.message,
    ...(r.detail ? { detail: r.detail } : {}),
    ...(r.hint ? { hint: r.hint } : {}),
    ...(r.location !== undefined ? { position: r.location + 1 } : {}),
  };
}

function planOf(
  statement: StatementAnalysis,
  d: StatementDecision & { verdict: 'allow' },
  catalogVersion: number,
  inner?: StatementAnalysis,
): StatementPlan {
  const rows = inner ?? statement;
  return {
    statement,
    mask: new Set(d.mask),
    redact: d.redactErrors,
    origins: rows.resultColumns.length > 0 ? rows.resultColumns.map((c) => c.origin) : null,
    effects: statement.sessionEffects,
    changesCatalog: statement.kind === 'MANAGE',
    catalogVersion,
  };
}

/**
 * Analyzes and decides `sql` for the session (DESIGN.md "Simple Query: analyze and decide every
 * statement in the string before any of it is sent"). Statements are decided in order; EXECUTE
 * and FETCH are decided as the prepared statement or cursor they name, with PREPARE/DECLARE
 * earlier in the same string taken into account. An analysis refused for an unknown relation,
 * column or function is tried once more with a fresh catalog. Never rejects except when the
 * catalog cannot be read (CatalogUnavailable: the caller refuses with its 57P03 or 58000 then).
 * With `memo` (the session's, gate-memo.ts), a text allowed before under the same catalog, policy,
 * roles and search paths gets the same result without analysis or decision.
 */
export function gate(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  memo?: GateMemo,
): GateResult | Promise<GateResult> {
  const stale = session.policyRefusal?.();
  if (stale) return staleGate(sql, session, cache, decide, stale);
  // The hot path is synchronous: a loaded catalog and an analysis that needs no fresher one.
  const now = session.catalogNow();
  if (now) {
    const known = memo?.get(sql, session, now);
    if (known) return known;
    const fast = guarded(() => {
      const analysis = cache.analyze(sql, { catalog: now, ...pathsFor(session, now) });
      if (analysis.refusal && STALE_CATALOG.has(analysis.refusal.sqlstate)) return undefined;
      const r = decideAnalysis(analysis, now, sql, session, cache, decide);
      if (r.ok) memo?.keep(sql, session, now, r, cache.sharedByLiterals(analysis));
      return r;
    });
    if (fast) return fast;
  }
  return slowGate(sql, session, cache, decide);
}

/** Transaction ends that stay allowed while the policy is stale: they read nothing and free the session. */
const ENDS_TRANSACTION: ReadonlySet<SessionEffect['kind']> = new Set(['rollback', 'rollback-to']);

/**
 * The gate while the policy in force is not confirmed current: only ROLLBACK (and ROLLBACK TO
 * SAVEPOINT) is let through, so a client can leave its transaction; everything else gets `stale`.
 */
async function staleGate(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  stale: Refusal,
): Promise<GateResult> {
  const { policyRefusal: _, ...rest } = session;
  const r = await gate(sql, rest, cache, decide);
  const onlyRollback =
    r.ok &&
    r.plans.length > 0 &&
    r.plans.every(
      (p) =>
        p.statement.sessionEffects.length > 0 &&
        p.statement.sessionEffects.every((e) => ENDS_TRANSACTION.has(e.kind)),
    );
  return onlyRollback ? r : { ok: false, refusal: stale };
}

/** Runs `f`, turning a stack overflow of the analysis into Postgres's 54001. */
function guarded<T>(f: () => T): T | GateResult {
  try {
    return f();
  } catch (e) {
    // A statement nested deep enough to exhaust the analysis's stack: Postgres's own answer.
    if (e instanceof RangeError) {
      return {
        ok: false,
        refusal: {
          sqlstate: '54001',
          message: 'stack depth limit exceeded',
          hint: 'The statement is nested too deeply for pgwarden to analyze.',
        },
      };
    }
    throw e;
  }
}

/** The gate with catalog loads: the first one, a refresh on an unknown name, an in-band read. */
async function slowGate(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
): Promise<GateResult> {
  let catalog = await session.catalog(false);
  const analyze = (c: Catalog) => guarded(() => cache.analyze(sql, { catalog: c, ...pathsFor(session, c) }));
  let analysis = analyze(catalog);
  const stale = (a: Analysis | GateResult) =>
    'statements' in a && a.refusal !== undefined && STALE_CATALOG.has(a.refusal.sqlstate);
  if (stale(analysis)) {
    catalog = await session.catalog(true);
    analysis = analyze(catalog);
  }
  if (stale(analysis)) {
    // Uncommitted DDL and temporary tables are visible to this session's own connection only.
    const own = await session.inBandCatalog();
    if (own) {
      catalog = own;
      analysis = analyze(catalog);
    }
  }
  if (!('statements' in analysis)) return analysis;
  const done = analysis;
  const prefix = stageable(done);
  if (prefix !== null) {
    const at = done.statements[prefix]?.location ?? 0;
    // The decided part alone is rewritten and sent: its statements are the head's.
    const headText = sliceCodePoints(sql, 0, at);
    const head = guarded(() =>
      decideAnalysis(
        { statements: done.statements.slice(0, prefix) },
        catalog,
        headText,
        session,
        cache,
        decide,
      ),
    );
    if (!head.ok) return head;
    return { ...head, head: headText, rest: blankCodePoints(sql, at) };
  }
  return guarded(() => decideAnalysis(done, catalog, sql, session, cache, decide));
}

/** Statement effects that end or nest transactions: a string with one is never run in stages. */
const TRANSACTION_CONTROL: ReadonlySet<SessionEffect['kind']> = new Set([
  'begin',
  'commit',
  'rollback',
  'savepoint',
  'rollback-to',
  'release',
]);

/**
 * The index of the first statement of `a` the gate cannot decide yet because an earlier
 * statement of the same string may create what it names (issue 15: `create temp table t(id int);
 * insert into t values (1)`), or null. Only for an analysis whose first refusal is an unknown
 * name (42P01, 42703, 42883, 3F000, 42704) at a statement after a MANAGE one, in a string that
 * controls no transaction itself (it then runs as one implicit transaction, which pgwarden opens
 * and closes around its stages).
 */
export function stageable(a: Analysis): number | null {
  if (!a.refusal || !STALE_CATALOG.has(a.refusal.sqlstate)) return null;
  const k = a.statements.findIndex((st) => st.refusal !== undefined);
  if (k <= 0) return null;
  if (!a.statements.slice(0, k).some((st) => st.kind === 'MANAGE')) return null;
  const controls = a.statements.some(
    (st) =>
      st.nodeType === 'TransactionStmt' || st.sessionEffects.some((e) => TRANSACTION_CONTROL.has(e.kind)),
  );
  return controls ? null : k;
}

/** `text` with its first `count` code points replaced by spaces (positions in the rest stay those of the whole). */
export function blankCodePoints(text: string, count: number): string {
  const head = sliceCodePoints(text, 0, count);
  return ' '.repeat(count) + text.slice(head.length);
}

/** Decides an analysis and builds the plan of each statement (EXECUTE/FETCH as what they name). */
function decideAnalysis(
  analysis: Analysis,
  catalog: Catalog,
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
): GateResult {
  // The statement a refusal of the whole string is about (the audit names its kind).
  const early = analysisRefusal(analysis);
  if (early) {
    const statement = analysis.statements.find((st) => st.refusal) ?? analysis.statements[0];
    return { ok: false, refusal: early, ...(statement ? { statement } : {}) };
  }

  const ctx = {
    config: session.config,
    connection: session.connection,
    database: session.database,
    catalog,
    ...(session.walls?.seeChecks === false ? { seeChecks: false } : {}),
    ...(session.walls?.rewrite === false ? { rewrite: false } : {}),
  };
  const decision = decide(analysis, session.roles, ctx);
  if (decision.refusal) {
    const refused = decision.statements.findIndex((d) => d.verdict === 'refuse');
    const statement = analysis.statements[refused] ?? analysis.statements[0];
    return { ok: false, refusal: decision.refusal, ...(statement ? { statement } : {}) };
  }

  // PREPARE/DECLARE earlier in the string name statements that EXECUTE/FETCH later in it use.
  const prepared = new Map(session.names.prepared);
  const cursors = new Map(session.names.cursors);
  const plans: StatementPlan[] = [];
  for (const [i, statement] of analysis.statements.entries()) {
    const d = decision.statements[i];
    if (d?.verdict !== 'allow') {
      return { ok: false, refusal: d?.verdict === 'refuse' ? d.refusal : missingDecision(), statement };
    }
    let inner: StatementAnalysis | undefined;
    for (const e of statement.sessionEffects) {
      if (e.kind === 'prepare') {
        prepared.set(e.name, {
          inner: e.inner,
          text: sliceCodePoints(sql, statement.location, statement.length),
          pathVersion: session.paths.version,
          catalogVersion: catalog.version,
        });
      } else if (e.kind === 'declare-cursor') cursors.set(e.name, e.inner);
      else if (e.kind === 'execute' || e.kind === 'fetch') {
        inner =
          e.kind === 'execute'
            ? reanalyzed(prepared.get(e.name), session, cache, catalog)
            : cursors.get(e.name);
        // Fail closed: a name pgwarden did not see PREPAREd or DECLAREd here (a protocol-level
        // portal shares the cursor namespace upstream, for one) is refused, never run unmasked.
        if (!inner) {
          return {
            ok: false,
            statement,
            refusal:
              e.kind === 'execute'
                ? { sqlstate: '26000', message: `prepared statement "${e.name}" does not exist` }
                : { sqlstate: '34000', message: `cursor "${e.name}" does not exist` },
          };
        }
        const innerDecision = decide({ statements: [inner] }, session.roles, ctx);
        const id = innerDecision.statements[0];
        if (innerDecision.refusal || !id || id.verdict !== 'allow') {
          return { ok: false, refusal: innerDecision.refusal ?? missingDecision(), statement };
        }
        plans.push(planOf(statement, id, catalog.version, inner));
      }
    }
    if (plans.length === i) plans.push(planOf(statement, d, catalog.version, inner));
  }
  if (!decision.hiddenOf) return { ok: true, plans, catalog };
  return maskAtRead(sql, analysis, decision, decision.hiddenOf, plans, catalog, session.rewrites);
}

/**
 * The session's paths, with its temporary schema first when the catalog knows it: Postgres
 * searches `pg_temp_N` before everything else for relations unless the path names it.
 */
function pathsFor(session: GateSession, catalog: Catalog): ReturnType<SearchPathTracker['paths']> {
  const p = session.paths.paths();
  const temp = (catalog as { tempSchema?: string }).tempSchema;
  if (!temp) return p;
  const add = (path: readonly string[]) =>
    path.includes('pg_temp') || path.includes(temp) ? path : [temp, ...path];
  return {
    searchPath: add(p.searchPath),
    sessionSearchPath: add(p.sessionSearchPath),
    transactionStartSearchPath: add(p.transactionStartSearchPath),
    resetSearchPath: add(p.resetSearchPath),
  };
}

/**
 * The plan of a SQL cursor used through the protocol (Describe or Execute of its portal, as
 * psycopg's named cursors do): the statement it was DECLAREd for, decided for the session now.
 * Output: the plan, or the refusal (42501 …, or 34000 for a name pgwarden did not see DECLAREd).
 */
export async function cursorPlan(
  name: string,
  session: GateSession,
  decide: Decider,
): Promise<StatementPlan | Refusal> {
  const inner = session.names.cursors.get(name);
  if (!inner) return { sqlstate: '34000', message: `portal "${name}" does not exist` };
  const catalog = await session.catalog(false);
  const ctx = { config: session.config, connection: session.connection, database: session.database, catalog };
  const decision = decide({ statements: [inner] }, session.roles, ctx);
  const d = decision.statements[0];
  if (decision.refusal || d?.verdict !== 'allow') return decision.refusal ?? missingDecision();
  return { ...planOf(inner, d, catalog.version), effects: [], changesCatalog: false };
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** `text.slice` by Unicode code points (the analysis's offsets count code points, as Postgres's positions do). */
export function sliceCodePoints(text: string, start: number, length: number): string {
  // Without surrogates code points are code units (one native scan, not a loop per character).
  if (!SURROGATE.test(text)) return length <= 0 ? text.slice(start) : text.slice(start, start + length);
  let i = 0;
  let cp = 0;
  while (cp < start && i < text.length) {
    i += (text.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
    cp++;
  }
  if (length <= 0) return text.slice(i);
  let j = i;
  while (cp < start + length && j < text.length) {
    j += (text.codePointAt(j) ?? 0) > 0xffff ? 2 : 1;
    cp++;
  }
  return text.slice(i, j);
}

/**
 * The statement a SQL-level prepared statement stands for now: the stored analysis when the
 * search_path and catalog are those it was analyzed under, else the PREPARE text analyzed again
 * (undefined, so refused, when that no longer analyzes).
 */
function reanalyzed(
  p: SqlPrepared | undefined,
  session: GateSession,
  cache: AnalysisCache,
  catalog: Catalog,
): StatementAnalysis | undefined {
  if (!p) return undefined;
  if (p.pathVersion === session.paths.version && p.catalogVersion === catalog.version) return p.inner;
  const again = cache.analyze(p.text, { catalog, ...pathsFor(session, catalog) });
  if (again.refusal) return undefined;
  for (const st of again.statements) {
    for (const e of st.sessionEffects) if (e.kind === 'prepare') return e.inner;
  }
  return undefined;
}

function missingDecision(): Refusal {
  return { sqlstate: '42501', message: 'pgwarden could not decide this statement and refuses it' };
}

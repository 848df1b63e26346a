// Decides a SQL string before any of it is sent: the hot path on a loaded catalog, the slow one with catalog reads, the stale policy's.
import type { Catalog } from '../catalog/types.js';
import type { Refusal } from '../policy/decision-types.js';
import type { Analysis, SessionEffect } from '../sql/analysis-types.js';
import type { AnalysisCache } from '../sql/analyze.js';
import { blankCodePoints, sliceCodePoints } from './code-points.js';
import { analysisRefusal, decideAnalysis } from './gate-decision.js';
import type { GateMemo } from './gate-memo.js';
import { type GateSession, pathsFor } from './gate-session.js';
import { STALE_CATALOG, stageable, TRANSACTION_CONTROL } from './gate-stages.js';
import { readsNoneOf } from './grant-independent.js';
import type { Decider, GateResult } from './statement-plan.js';

/**
 * Analyzes and decides `sql` for the session (DESIGN.md "Simple Query: analyze and decide every
 * statement in the string before any of it is sent"). Statements are decided in order; EXECUTE
 * and FETCH are decided as the prepared statement or cursor they name, with PREPARE/DECLARE
 * earlier in the same string taken into account. An analysis refused for an unknown relation,
 * column or function is tried once more with a fresh catalog. Never rejects except when the
 * catalog cannot be read (CatalogUnavailable: the caller refuses with its 57P03 or 58000 then).
 * With `memo` (the session's, gate-memo.ts), a text allowed before under the same catalog, policy,
 * roles and search paths gets the same result without analysis or decision. A string allowed with
 * a statement that may change the catalog (MANAGE) is handed back once `session.manageReady`'s
 * wait is over (a grant sync running, issue 15). `utf8`: the text's UTF-8 bytes when the caller
 * has them (a message's payload), which the rewrite then edits in place of a copy.
 */
export function gate(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  memo?: GateMemo,
  utf8?: Buffer,
): GateResult | Promise<GateResult> {
  const r = gateNow(sql, session, cache, decide, memo, utf8);
  const ready = session.manageReady;
  if (!ready) return r;
  // A string that may change the catalog waits for a grant sync running (session.manageReady).
  const hold = (x: GateResult): GateResult | Promise<GateResult> => {
    const wait = x.ok && x.plans.some((p) => p.changesCatalog) ? ready() : undefined;
    return wait ? wait.then(() => x) : x;
  };
  return r instanceof Promise ? r.then(hold) : hold(r);
}

function gateNow(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  memo?: GateMemo,
  utf8?: Buffer,
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
      // A string run in stages is decided stage by stage, on the slow path.
      if (stageable(analysis) !== null) return undefined;
      const r = decideAnalysis(analysis, now, sql, session, cache, decide, utf8);
      if (r.ok) memo?.keep(sql, session, now, r, cache.sharedByLiterals(analysis));
      return r;
    });
    if (fast) return fast;
  } else {
    // Issue 15: a COMMIT (or SAVEPOINT, ROLLBACK) after DDL in a transaction names nothing the
    // catalog holds: it is decided with the last catalog, without a read on the session's connection.
    const last = session.catalogLast?.();
    const control = last
      ? guarded(() => {
          const analysis = cache.analyze(sql, { catalog: last, ...pathsFor(session, last) });
          if (!transactionControlOnly(analysis)) return undefined;
          return decideAnalysis(analysis, last, sql, session, cache, decide, utf8);
        })
      : undefined;
    if (control) return control;
  }
  return slowGate(sql, session, cache, decide, utf8);
}

/**
 * Whether every statement of `analysis` is transaction control (BEGIN, COMMIT, ROLLBACK,
 * SAVEPOINT, RELEASE, ROLLBACK TO: a TransactionStmt needing no permission) and none is refused:
 * its analysis and decision are the same under any catalog.
 */
function transactionControlOnly(analysis: Analysis): boolean {
  if (analysis.refusal || analysis.statements.length === 0) return false;
  return analysis.statements.every(
    (s) =>
      s.nodeType === 'TransactionStmt' &&
      s.kind === 'SESSION' &&
      !s.refusal &&
      s.requirements.length === 0 &&
      s.functions.length === 0 &&
      s.sessionEffects.every((e) => TRANSACTION_CONTROL.has(e.kind)),
  );
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

/**
 * Issue 15: a set login's statement while the grant sync after a catalog read runs, decided with
 * that catalog without waiting for the sync when it is a plain read of relations the sync leaves
 * as they are (grant-independent.ts); undefined when it must wait (or no sync runs).
 */
async function beforeGrants(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  utf8?: Buffer,
): Promise<GateResult | undefined> {
  const pending = await session.catalogBeforeGrants?.();
  if (!pending) return undefined;
  const { catalog, changed } = pending;
  const analysis = guarded(() => cache.analyze(sql, { catalog, ...pathsFor(session, catalog) }));
  if (!('statements' in analysis) || !readsNoneOf(analysis, catalog, changed)) return undefined;
  return guarded(() => decideAnalysis(analysis, catalog, sql, session, cache, decide, utf8));
}

/** The gate with catalog loads: the first one, a refresh on an unknown name, an in-band read. */
async function slowGate(
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  utf8?: Buffer,
): Promise<GateResult> {
  const early = await beforeGrants(sql, session, cache, decide, utf8);
  if (early) return early;
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
  const stages = stageable(done);
  if (stages !== null) {
    const at = done.statements[stages.at]?.location ?? 0;
    // The decided part alone is rewritten and sent: its statements are the head's.
    const headText = sliceCodePoints(sql, 0, at);
    const head = guarded(() =>
      decideAnalysis(
        { statements: done.statements.slice(0, stages.at) },
        catalog,
        headText,
        session,
        cache,
        decide,
      ),
    );
    if (!head.ok) return head;
    const refusal = analysisRefusal(done);
    return {
      ...head,
      head: headText,
      rest: blankCodePoints(sql, at),
      controls: stages.controls,
      ...(refusal ? { refusal } : {}),
    };
  }
  return guarded(() => decideAnalysis(done, catalog, sql, session, cache, decide, utf8));
}

// An analysis decided for a session: the decision, then the plan of each statement (EXECUTE and FETCH as what they name).
import type { Catalog } from '../catalog/types.js';
import type { Refusal, StatementDecision } from '../policy/decision-types.js';
import type { Analysis, StatementAnalysis } from '../sql/analysis-types.js';
import type { AnalysisCache } from '../sql/analyze.js';
import { sliceCodePoints } from './code-points.js';
import { maskAtRead } from './gate-mask-at-read.js';
import { type GateSession, pathsFor, type SqlPrepared } from './gate-session.js';
import { mayChangeCatalog } from './gate-stages.js';
import type { Decider, GateResult, StatementPlan } from './statement-plan.js';

/**
 * The refusal of analysis `a` as the client gets it (its first statement refusal, or parse error;
 * `position` 1-based as in ErrorResponse), or undefined when the analysis refuses nothing.
 */
export function analysisRefusal(a: Analysis): Refusal | undefined {
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
    ...(inner ? { rows: inner } : {}),
    mask: new Set(d.mask),
    redact: d.redactErrors,
    origins: rows.resultColumns.length > 0 ? rows.resultColumns.map((c) => c.origin) : null,
    effects: statement.sessionEffects,
    changesCatalog: mayChangeCatalog(statement) || (inner !== undefined && mayChangeCatalog(inner)),
    catalogVersion,
  };
}

/**
 * Decides an analysis and builds the plan of each statement (EXECUTE/FETCH as what they name);
 * `utf8`, the text's UTF-8 bytes when the caller has them, spares the rewrite a copy.
 */
export function decideAnalysis(
  analysis: Analysis,
  catalog: Catalog,
  sql: string,
  session: GateSession,
  cache: AnalysisCache,
  decide: Decider,
  utf8?: Buffer,
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
  return maskAtRead(sql, analysis, decision, decision.hiddenOf, plans, catalog, session.rewrites, utf8);
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
  // A cursor's query runs at FETCH: the user code it calls runs then.
  return { ...planOf(inner, d, catalog.version), effects: [], changesCatalog: mayChangeCatalog(inner) };
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

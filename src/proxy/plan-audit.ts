// A plan's audit fragment and a statement's audit text, made once each; the text a reply entry keeps.
import { type AuditFragment, auditFragment, auditKind } from './audit.js';
import { normalizeForAudit } from './audit-normalize.js';
import { sliceCodePoints } from './code-points.js';
import type { StatementPlan } from './statement-plan.js';

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
 * masked at read (the rewrite masks them upstream) count as masked, named as the rows' statement
 * names them (an EXECUTE's: its PREPAREd statement's result columns).
 */
export function planAudit(plan: StatementPlan, sql: string): AuditFragment {
  let f = planAudits.get(plan);
  if (f === undefined) {
    const mask = plan.maskedAtRead ?? plan.mask;
    const masked =
      mask.size > 0
        ? [...mask].map((i) => (plan.rows ?? plan.statement).resultColumns[i]?.name ?? String(i))
        : undefined;
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

import type { Analysis, SessionEffect } from '../sql/analysis-types.js';

/** SQLSTATEs of analysis refusals that a fresher catalog may cure (issue 5: analysis runs once more). */
export const STALE_CATALOG = new Set(['42P01', '42703', '42883', '3F000', '42704']);

/** Statement effects that end or nest transactions: a string with one is never run in stages, and a string of them alone is decided under any catalog (statement-gate.ts). */
export const TRANSACTION_CONTROL: ReadonlySet<SessionEffect['kind']> = new Set([
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

// When a multi-statement string runs in stages (issue 15), and how its transaction control is run.
import type { Analysis, SessionEffect, StatementAnalysis } from '../sql/analysis-types.js';
import { CATALOG_SCHEMAS } from '../sql/catalog-allowlist.js';

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

/** Whether statement `st` controls a transaction (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, ROLLBACK TO, two-phase commit). */
export function controlsTransaction(st: StatementAnalysis): boolean {
  return st.nodeType === 'TransactionStmt' || st.sessionEffects.some((e) => TRANSACTION_CONTROL.has(e.kind));
}

/**
 * Whether running `statement` may change the catalog, as PostgreSQL would let it: DDL and every
 * other statement of kind MANAGE, and any statement that needs MANAGE for what it runs (a user
 * function or procedure called in a SELECT, a FROM or a DML, a type whose input or cast runs user
 * code): user code may run DDL by dynamic SQL (`EXECUTE 'create or replace view …'`), and a
 * catalog left as it was would then decide later statements, of every session, under the old
 * definitions. Such a statement is treated as DDL: the catalog is read again after it, and its
 * COMMIT raises the commit fence. Pure.
 */
export function mayChangeCatalog(statement: StatementAnalysis): boolean {
  return (
    statement.kind === 'MANAGE' ||
    statement.requirements.some((r) => r.action === 'MANAGE' && !BUILT_IN_FUNCTION.test(r.reason))
  );
}

/**
 * The MANAGE reason of a pg_catalog function (function-allowlist.ts checkFunction): only a
 * superuser can create functions in pg_catalog, and its built-in ones (pg_sleep, lo_*, pg_notify,
 * …) run no user code and change no relation, column, view or grant, so a statement that needs
 * MANAGE only for them does not change what the analysis reads.
 */
const BUILT_IN_FUNCTION = /^function pg_catalog\.[a-z0-9_]+$/;

/**
 * Where a string is cut because an earlier statement of it may create what a later one names
 * (issue 15: `create temp table t(id int); insert into t values (1)`), or null: `at`, the index
 * of the first statement the gate cannot decide yet; `controls`, whether the string controls a
 * transaction itself. Cut before the first statement naming a relation after a MANAGE one, when
 * no statement before it is refused; else before the first refused statement (not the first) when
 * its refusal is an unknown name (42P01, 42703, 42883, 3F000, 42704). Without transaction control the string runs as
 * one implicit transaction, which pgwarden opens and closes around its stages; with it, only as
 * the client's own block ({@link blockAfterHead}). A refusal that stands after the statements
 * before it ran reaches the client after their replies, as Postgres sends an error mid-string.
 */
export function stageable(a: Analysis): { at: number; controls: boolean } | null {
  const refused = a.statements.findIndex((st) => st.refusal !== undefined);
  const changed = afterCatalogChange(a);
  let k: number | null = null;
  if (changed !== null && (refused < 0 || changed <= refused)) k = changed;
  else if (refused > 0 && a.refusal && STALE_CATALOG.has(a.refusal.sqlstate)) k = refused;
  if (k === null || k <= 0) return null;
  return { at: k, controls: a.statements.some(controlsTransaction) };
}

/**
 * The index of the first statement of `a` that names a relation outside the system catalog after
 * a statement of the same string that may change the catalog ({@link mayChangeCatalog}: it may have created, altered or dropped it: `alter
 * table t add column v int; select * from t` expands `*` with `v`), or null: its analysis under
 * the catalog of before the string would not be the one Postgres makes (issue 15: "analyze each
 * statement under the state the earlier ones leave").
 */
function afterCatalogChange(a: Analysis): number | null {
  const first = a.statements.findIndex((st) => mayChangeCatalog(st) && st.nodeType !== 'TransactionStmt');
  if (first < 0) return null;
  const k = a.statements.findIndex(
    (st, i) =>
      i > first &&
      (st.bindings?.relations ?? []).some((b) => b.kind === 'relation' && !CATALOG_SCHEMAS.has(b.schema)),
  );
  return k < 0 ? null : k;
}

/**
 * What running `head` (the first statements of a Query, in one Query upstream) leaves, starting
 * inside a transaction block (`inBlock`) or not, when the string controls transactions itself:
 * `open`, a block is open after it (BEGIN, or the client's block still going), so the rest runs in
 * it exactly as on a direct connection; `ended`, its last statement ends the transaction (COMMIT,
 * ROLLBACK), so the rest is a string of its own (a new implicit transaction, as Postgres starts
 * one); null otherwise (statements after a COMMIT would commit on their own upstream, where a
 * direct connection runs them in one implicit transaction with the rest; two-phase commit).
 * Source: PostgreSQL's transaction block states (xact.c: BEGIN turns the implicit transaction of
 * a multi-statement Query into a block, COMMIT ends either).
 */
export function blockAfterHead(
  head: readonly StatementAnalysis[],
  inBlock: boolean,
): 'open' | 'ended' | null {
  let open = inBlock;
  let endedAt = -1;
  for (const [i, st] of head.entries()) {
    if (st.nodeType === 'TransactionStmt' && st.kind === 'MANAGE') return null;
    for (const e of st.sessionEffects) {
      if (e.kind === 'begin') open = true;
      else if (e.kind === 'commit' || e.kind === 'rollback') {
        open = false;
        endedAt = i;
      }
    }
  }
  if (open) return 'open';
  return endedAt === head.length - 1 ? 'ended' : null;
}

/**
 * How pgwarden runs transaction-control statement `st` of a string at a point where Postgres would
 * be in the string's implicit transaction block while pgwarden holds a block of its own open in
 * its place (relay-string-control.ts): 'begin', sent inside that block (Postgres turns its implicit
 * block into the client's; the 25001 warning pgwarden's block draws is dropped); 'commit', sent
 * after pgwarden's own COMMIT in one Query (plain COMMIT: Postgres commits, warning 25P01); 'rollback',
 * after pgwarden's own ROLLBACK (ROLLBACK warns 25P01; SAVEPOINT, RELEASE, ROLLBACK TO and AND
 * CHAIN fail 25P01 and Postgres rolls the whole back); 'refuse', two-phase commit. A statement sent
 * after pgwarden's COMMIT or ROLLBACK in the same Query runs in Postgres's implicit block of that
 * Query, so its warning or error is Postgres's own, word for word. Source: xact.c
 * (BeginTransactionBlock, EndTransactionBlock, UserAbortTransactionBlock, DefineSavepoint in
 * TBLOCK_IMPLICIT_INPROGRESS), checked against PostgreSQL 15.
 */
export function implicitControl(st: StatementAnalysis): 'begin' | 'commit' | 'rollback' | 'refuse' {
  if (st.kind === 'MANAGE') return 'refuse';
  const kinds = st.sessionEffects.map((e) => e.kind).join(' ');
  if (kinds === 'begin') return 'begin';
  if (kinds === 'commit') return 'commit';
  return 'rollback';
}

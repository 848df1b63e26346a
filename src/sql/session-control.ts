// Session-control statements: transactions, SET/RESET/SHOW, DISCARD, prepared statements and cursors (no permission needed).

import type { ColumnUse, SessionEffect, StatementAnalysis } from './analysis-types.js';
import { constText } from './node-values.js';
import { isReservedStatementName, reservedStatementRefusal } from './reserved-statement-names.js';
import { searchPathFromSetArgs } from './search-path-text.js';
import {
  checkTextSetting,
  HARMLESS_MULTI_SETS,
  HARMLESS_SETTINGS,
  isPgwardenSetting,
  PGWARDEN_SETTING_MESSAGE,
  TEXT_SETTINGS,
} from './session-settings.js';
import {
  emptyAnalysis,
  manageStatement,
  refusalAt,
  refusedStatement,
  type StatementContext,
  sessionStatement,
} from './statement-context.js';

type Fields = Record<string, unknown>;

/**
 * BEGIN/START TRANSACTION, COMMIT/END, ROLLBACK/ABORT (AND CHAIN: a new transaction begins),
 * SAVEPOINT, RELEASE, ROLLBACK TO: session effects, no permission. Two-phase commit (PREPARE
 * TRANSACTION, COMMIT/ROLLBACK PREPARED) leaves a transaction behind the session: MANAGE.
 */
export function transactionStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const chain = n.chain === true;
  const name = typeof n.savepoint_name === 'string' ? n.savepoint_name : '';
  switch (n.kind) {
    case 'TRANS_STMT_BEGIN':
    case 'TRANS_STMT_START':
      return sessionStatement(ctx, [{ kind: 'begin' }]);
    case 'TRANS_STMT_COMMIT':
      return sessionStatement(ctx, chain ? [{ kind: 'commit' }, { kind: 'begin' }] : [{ kind: 'commit' }]);
    case 'TRANS_STMT_ROLLBACK':
      return sessionStatement(
        ctx,
        chain ? [{ kind: 'rollback' }, { kind: 'begin' }] : [{ kind: 'rollback' }],
      );
    case 'TRANS_STMT_SAVEPOINT':
      return sessionStatement(ctx, [{ kind: 'savepoint', name }]);
    case 'TRANS_STMT_RELEASE':
      return sessionStatement(ctx, [{ kind: 'release', name }]);
    case 'TRANS_STMT_ROLLBACK_TO':
      return sessionStatement(ctx, [{ kind: 'rollback-to', name }]);
    case 'TRANS_STMT_PREPARE':
      return manageStatement(ctx, 'PREPARE TRANSACTION');
    case 'TRANS_STMT_COMMIT_PREPARED':
      return manageStatement(ctx, 'COMMIT PREPARED');
    case 'TRANS_STMT_ROLLBACK_PREPARED':
      return manageStatement(ctx, 'ROLLBACK PREPARED');
    default:
      return refusedStatement(
        ctx,
        refusalAt(ctx, '0A000', `pgwarden has no rule for transaction statement ${String(n.kind)}`),
      );
  }
}

/**
 * SET / SET LOCAL / RESET / RESET ALL / `SET … TO DEFAULT` / `SET … FROM CURRENT` / SET TRANSACTION.
 * - RESET, RESET ALL and `TO DEFAULT` of any setting return it to the session default: no
 *   permission (search_path: `reset-search-path`, or `set-search-path` LOCAL to the reset value);
 * - SET of a harmless setting (session-settings.ts): no permission; search_path: `set-search-path`;
 * - client_encoding other than UTF8, standard_conforming_strings other than on: refused 0A000;
 * - SET TRANSACTION / SESSION CHARACTERISTICS / TRANSACTION SNAPSHOT: no permission;
 * - any other setting (role, session_authorization, custom `x.y`, work_mem, …): MANAGE `SET name`.
 */
export function variableSetStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const name = typeof n.name === 'string' ? n.name : '';
  const setting = name.toLowerCase();
  const local = n.is_local === true;
  const args = (n.args as unknown[] | undefined) ?? [];
  switch (n.kind) {
    case 'VAR_RESET_ALL':
      // RESET ALL resets search_path with every other setting; LOCAL is not allowed with it.
      return sessionStatement(ctx, [{ kind: 'reset-search-path' }]);
    case 'VAR_RESET':
    case 'VAR_SET_DEFAULT': {
      if (setting !== 'search_path') return sessionStatement(ctx);
      if (local && n.kind === 'VAR_SET_DEFAULT') {
        return sessionStatement(ctx, [
          { kind: 'set-search-path', path: [...ctx.resetSearchPath], local: true },
        ]);
      }
      return sessionStatement(ctx, [{ kind: 'reset-search-path' }]);
    }
    case 'VAR_SET_CURRENT':
      // `SET x FROM CURRENT` keeps the current value.
      return HARMLESS_SETTINGS.has(setting) || TEXT_SETTINGS.has(setting)
        ? sessionStatement(ctx)
        : manageStatement(ctx, `SET ${setting}`);
    case 'VAR_SET_MULTI':
      return HARMLESS_MULTI_SETS.has(name) ? sessionStatement(ctx) : manageStatement(ctx, `SET ${name}`);
    case 'VAR_SET_VALUE': {
      const values = args.map(constText);
      if (setting === 'search_path') {
        if (values.some((v) => v === undefined || v === null)) {
          return refusedStatement(
            ctx,
            refusalAt(ctx, '0A000', 'SET search_path needs constant schema names'),
            'SESSION',
          );
        }
        const path = searchPathFromSetArgs(values as string[]);
        return sessionStatement(ctx, [{ kind: 'set-search-path', path, local }]);
      }
      if (isPgwardenSetting(setting)) {
        return refusedStatement(ctx, refusalAt(ctx, '42501', PGWARDEN_SETTING_MESSAGE(setting)), 'SESSION');
      }
      if (TEXT_SETTINGS.has(setting)) {
        const value = values.length === 1 && typeof values[0] === 'string' ? values[0] : undefined;
        const r =
          value === undefined
            ? refusalAt(ctx, '0A000', `SET ${setting} needs one constant value`)
            : checkTextSetting(setting, value);
        return r ? refusedStatement(ctx, { ...r, location: ctx.location }, 'SESSION') : sessionStatement(ctx);
      }
      return HARMLESS_SETTINGS.has(setting) ? sessionStatement(ctx) : manageStatement(ctx, `SET ${setting}`);
    }
    default:
      return refusedStatement(
        ctx,
        refusalAt(ctx, '0A000', `pgwarden has no rule for SET form ${String(n.kind)}`),
      );
  }
}

/**
 * SHOW name / SHOW ALL: no permission. Postgres answers an unknown name itself (42704); pgwarden's
 * own catalog reads leave no `pgwarden_catalog.*` placeholder in a client's session (the in-band
 * read hands nothing on through settings, relay-in-band-catalog.ts), so there is none to hide.
 */
export function showStatement(_n: Fields, ctx: StatementContext): StatementAnalysis {
  return sessionStatement(ctx);
}

/** DISCARD ALL resets the session (search_path, prepared statements, cursors); PLANS/SEQUENCES/TEMP: no effect tracked. */
export function discardStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  return sessionStatement(ctx, n.target === 'DISCARD_ALL' ? [{ kind: 'discard-all' }] : []);
}

/** PREPARE or DEALLOCATE of a name pgwarden keeps for its own statements: refused, 42939. */
function reservedName(ctx: StatementContext, name: string): StatementAnalysis {
  const r = reservedStatementRefusal(name);
  return refusedStatement(ctx, refusalAt(ctx, r.sqlstate, r.message), 'SESSION');
}

/** DEALLOCATE name / DEALLOCATE ALL (no name in the node); a reserved name is refused (42939). */
export function deallocateStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  if (typeof n.name === 'string' && isReservedStatementName(n.name)) return reservedName(ctx, n.name);
  return sessionStatement(ctx, [{ kind: 'deallocate', name: typeof n.name === 'string' ? n.name : null }]);
}

/** CLOSE name / CLOSE ALL (no portal name in the node). */
export function closeStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  return sessionStatement(ctx, [
    { kind: 'close-cursor', name: typeof n.portalname === 'string' ? n.portalname : null },
  ]);
}

/**
 * FETCH / MOVE on a cursor: effect `fetch` so the proxy checks the cursor is one it tracks (its
 * DECLARE's analysis decides and masks the rows); MOVE returns no rows but is tracked the same way.
 */
export function fetchStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  return sessionStatement(ctx, [
    { kind: 'fetch', name: typeof n.portalname === 'string' ? n.portalname : '', move: n.ismove === true },
  ]);
}

/** Uses of a nested statement without its `output` uses (no rows come back from this statement). */
function nonOutputUses(uses: readonly ColumnUse[]): ColumnUse[] {
  return uses.filter((u) => u.use !== 'output');
}

/**
 * The checks shared by PREPARE and DECLARE: the nested statement is analyzed now, under the current
 * search_path; its refusal refuses this statement; a nested search_path change (set_config) is
 * refused (0A000) because it would happen at EXECUTE / FETCH time.
 */
function nestedForLater(
  ctx: StatementContext,
  query: unknown,
  what: string,
): StatementAnalysis | { inner: StatementAnalysis } {
  const inner = ctx.analyzeNested(query);
  if (inner.refusal) return { ...emptyAnalysis(ctx, inner.kind), refusal: inner.refusal };
  if (inner.sessionEffects.length > 0) {
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', `${what} of a statement that changes search_path is not supported`),
      inner.kind,
    );
  }
  return { inner };
}

/**
 * PREPARE name AS <row statement>: kind, requirements and non-output uses of the inner statement
 * (so a statement the caller may not run is refused at PREPARE already), and the effect `prepare`
 * carrying the inner analysis, which the proxy decides again — and masks with — at EXECUTE.
 */
export function prepareStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  if (typeof n.name === 'string' && isReservedStatementName(n.name)) return reservedName(ctx, n.name);
  const r = nestedForLater(ctx, n.query, 'PREPARE');
  if (!('inner' in r)) return r;
  const { inner } = r;
  return {
    ...emptyAnalysis(ctx, inner.kind),
    requirements: inner.requirements,
    uses: nonOutputUses(inner.uses),
    functions: inner.functions,
    catalogRelations: inner.catalogRelations,
    sessionEffects: [{ kind: 'prepare', name: typeof n.name === 'string' ? n.name : '', inner }],
  };
}

/**
 * DECLARE name CURSOR FOR <query>: like PREPARE, with the effect `declare-cursor`; FETCH returns
 * the rows, masked per the inner analysis.
 */
export function declareCursorStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const r = nestedForLater(ctx, n.query, 'DECLARE CURSOR');
  if (!('inner' in r)) return r;
  const { inner } = r;
  return {
    ...emptyAnalysis(ctx, inner.kind),
    requirements: inner.requirements,
    uses: nonOutputUses(inner.uses),
    functions: inner.functions,
    catalogRelations: inner.catalogRelations,
    sessionEffects: [
      { kind: 'declare-cursor', name: typeof n.portalname === 'string' ? n.portalname : '', inner },
    ],
  };
}

/**
 * EXECUTE name (params): effect `execute` (the proxy decides the prepared statement's analysis).
 * The parameters are expressions evaluated now: they are analyzed as `SELECT <params>`, so
 * functions outside the allowlist need MANAGE and every column value read is a `compute` use
 * (`EXECUTE parameter`). EXECUTE with a set_config search_path parameter is refused (0A000).
 */
export function executeStatement(n: Fields, ctx: StatementContext): StatementAnalysis {
  const name = typeof n.name === 'string' ? n.name : '';
  const params = (n.params as unknown[] | undefined) ?? [];
  const effects: SessionEffect[] = [{ kind: 'execute', name }];
  if (params.length === 0) return sessionStatement(ctx, effects);
  const select = {
    SelectStmt: {
      targetList: params.map((p) => ({ ResTarget: { val: p, location: -1 } })),
      limitOption: 'LIMIT_OPTION_DEFAULT',
      op: 'SETOP_NONE',
    },
  };
  const inner = ctx.analyzeNested(select);
  if (inner.refusal) return { ...sessionStatement(ctx, effects), refusal: inner.refusal };
  if (inner.sessionEffects.length > 0) {
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', 'EXECUTE parameters that change search_path are not supported'),
      'SESSION',
    );
  }
  return {
    ...sessionStatement(ctx, effects),
    requirements: inner.requirements,
    uses: inner.uses.map((u) => (u.use === 'output' ? toCompute(u, 'EXECUTE parameter') : u)),
    functions: inner.functions,
    catalogRelations: inner.catalogRelations,
  };
}

/** An `output` use turned into a `compute` use with `context` (a value stored or passed on). */
export function toCompute(u: Extract<ColumnUse, { use: 'output' }>, context: string): ColumnUse {
  return {
    use: 'compute',
    context,
    schema: u.schema,
    table: u.table,
    column: u.column,
    location: u.location,
  };
}

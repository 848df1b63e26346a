// A row statement (SELECT, INSERT, UPDATE, DELETE, MERGE): the query analysis's result, converted and checked against the allowlists.

import type { ColumnUse, Requirement, StatementAnalysis } from './analysis-types.js';
import {
  CATALOG_SCHEMAS,
  catalogColumnDenial,
  catalogRelationDenial,
  ownSchemaDenial,
} from './catalog-allowlist.js';
import { checkFunction } from './function-allowlist.js';
import type { RowNodeType } from './query-analyzer.js';
import { analyzeSetConfigCalls } from './set-config.js';
import {
  emptyAnalysis,
  manageRequirement,
  refusalAt,
  refusedStatement,
  type StatementContext,
} from './statement-context.js';

/** Whether a requirement is on a catalog relation (or one of its columns). */
function onCatalog(r: Requirement): boolean {
  return r.object.level !== 'database' && CATALOG_SCHEMAS.has(r.object.schema);
}

/** Adds `r` unless a MANAGE requirement with the same reason is already there. */
function pushUnique(list: Requirement[], r: Requirement): void {
  if (r.action === 'MANAGE' && list.some((x) => x.action === 'MANAGE' && x.reason === r.reason)) return;
  list.push(r);
}

/**
 * Analyzes a row statement under the context's search path. Input: the node type and fields.
 * Output: the query analysis's result with
 * - every location converted from UTF-8 bytes to characters;
 * - requirements and column uses on catalog relations (pg_catalog, information_schema) dropped —
 *   policies have no rules for them; the catalog allowlist governs them instead, adding MANAGE
 *   (`catalog relation pg_catalog.pg_stats`) for a relation it does not list;
 * - MANAGE (`schema pgwarden (…)`) for any reference into pgwarden's own schema, whatever the
 *   rules say (the policy store and the set logins' passwords live there);
 * - MANAGE (`function pg_catalog.pg_read_file`) for each called function outside the function
 *   allowlist; set_config decided by its arguments (set-config.ts), search_path changes as
 *   session effects.
 * Refusals: 0A000 when the search path is unknown (after ROLLBACK TO an earlier savepoint in the
 * same string), the query analysis's own refusal (42P01, 42703, 42702, 0A000 …), 0A000 if it threw.
 */
export function analyzeRowStatement(
  nodeType: RowNodeType,
  node: unknown,
  ctx: StatementContext,
): StatementAnalysis {
  const kindOf = {
    SelectStmt: 'SELECT',
    InsertStmt: 'INSERT',
    UpdateStmt: 'UPDATE',
    DeleteStmt: 'DELETE',
    MergeStmt: 'MERGE',
  } as const;
  if (ctx.searchPath === null) {
    return refusedStatement(
      ctx,
      refusalAt(
        ctx,
        '0A000',
        'the search_path this statement would run under is not known here (it follows ROLLBACK or ROLLBACK TO SAVEPOINT in the same query string); send it as a query of its own',
      ),
      kindOf[nodeType],
    );
  }
  const toChar = ctx.parsed.offsets.toChar;
  let result: ReturnType<StatementContext['analyzeQuery']>;
  try {
    result = ctx.analyzeQuery(nodeType, node, { catalog: ctx.catalog, searchPath: ctx.searchPath });
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    return refusedStatement(
      ctx,
      refusalAt(ctx, '0A000', `pgwarden could not analyze this statement: ${msg}`),
      kindOf[nodeType],
    );
  }
  const requirements: Requirement[] = [];
  for (const r of result.requirements) {
    if (onCatalog(r)) {
      const o = r.object;
      const reason = o.level === 'column' ? catalogColumnDenial(o.schema, o.table, o.column) : null;
      if (reason)
        pushUnique(
          requirements,
          manageRequirement(ctx, reason, r.location === undefined ? ctx.location : toChar(r.location)),
        );
      continue;
    }
    const at = r.location === undefined ? undefined : toChar(r.location);
    const own = r.object.level === 'database' ? null : ownSchemaDenial(r.object.schema);
    if (own) pushUnique(requirements, manageRequirement(ctx, own, at ?? ctx.location));
    pushUnique(requirements, at === undefined ? r : { ...r, location: at });
  }
  const uses: ColumnUse[] = [];
  for (const u of result.uses) {
    if (CATALOG_SCHEMAS.has(u.schema)) continue;
    // A view's body reaching into schema pgwarden: its base columns are the statement's uses.
    const own = ownSchemaDenial(u.schema);
    if (own) pushUnique(requirements, manageRequirement(ctx, own, toChar(u.location)));
    uses.push({ ...u, location: toChar(u.location) });
  }
  const functions = result.functions.map((f) => ({ ...f, location: toChar(f.location) }));
  for (const rel of result.catalogRelations) {
    const dot = rel.indexOf('.');
    const reason = catalogRelationDenial(rel.slice(0, dot), rel.slice(dot + 1));
    if (reason) pushUnique(requirements, manageRequirement(ctx, reason));
  }
  let needsSetConfig = false;
  for (const f of functions) {
    const v = checkFunction(f, ctx.catalog);
    if (v.allowed === 'set_config') needsSetConfig = true;
    else if (v.allowed === false) pushUnique(requirements, manageRequirement(ctx, v.reason, f.location));
  }
  const base = emptyAnalysis(ctx, result.kind);
  let analysis: StatementAnalysis = {
    ...base,
    requirements,
    resultColumns: result.resultColumns,
    uses,
    functions,
    catalogRelations: result.catalogRelations,
    planReads: (result.planReads ?? [])
      .filter((c) => !CATALOG_SCHEMAS.has(c.schema))
      .map((c) => ({ ...c, location: toChar(c.location) })),
    boundColumns: result.boundColumns ?? [],
    ...(result.bindings ? { bindings: result.bindings } : {}),
  };
  if (result.refusal) {
    const r = result.refusal;
    return { ...analysis, refusal: r.location === undefined ? r : { ...r, location: toChar(r.location) } };
  }
  if (needsSetConfig) {
    const readsPgSettings =
      result.catalogRelations.length === 1 && result.catalogRelations[0] === 'pg_catalog.pg_settings';
    const sc = analyzeSetConfigCalls(nodeType, node, toChar, readsPgSettings);
    for (const r of sc.requirements) pushUnique(requirements, r);
    analysis = { ...analysis, sessionEffects: sc.effects };
    if (sc.refusal) analysis = { ...analysis, refusal: sc.refusal };
  }
  return analysis;
}

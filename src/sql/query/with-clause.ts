// WITH: CTEs in order (each sees the earlier ones), data-modifying CTEs, and WITH RECURSIVE by fixpoint.

import { analyzeDml } from './dml.js';
import { unsupported } from './errors.js';
import { mergeLineages, NO_ORIGIN, passUp, sameLineage } from './lineage.js';
import { list, loc, names, type Obj, obj, str, unwrap } from './node-kinds.js';
import type { CteDef, ItemColumn, Scope } from './scope.js';
import { analyzeSelect } from './select.js';
import { combineBranches } from './set-operation.js';
import type { QueryState } from './state.js';
import type { OutColumn } from './target-list.js';

/** At most this many passes over a recursive term; lineage only grows, so the fixpoint comes well before. */
const MAX_PASSES = 64;

function columnsOf(out: readonly OutColumn[], aliases: readonly string[], recursive: boolean): ItemColumn[] {
  // Postgres reports no RowDescription origin through a recursive CTE.
  return out.map((c, i) => ({
    name: aliases[i] ?? c.name,
    lineage: recursive ? passUp(c.lineage, NO_ORIGIN) : passUp(c.lineage),
  }));
}

/**
 * A recursive CTE `base UNION [ALL] recursive-term`: the base term's columns are registered
 * first, then the recursive term is analyzed again until the CTE's lineage stops changing (a
 * fixpoint, never an unrolling); uses recorded by a pass that changed the lineage are discarded.
 */
function recursiveCte(
  state: QueryState,
  scope: Scope,
  cteScope: Scope,
  name: string,
  aliases: string[],
  body: Obj,
): void {
  const base = analyzeSelect(state, obj(body.larg) ?? {}, cteScope);
  const def: CteDef = { name, columns: columnsOf(base, aliases, true), recursive: true };
  scope.ctes.set(name, def);
  const all = body.all === true;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const usesMark = state.sink.length;
    const fnMark = state.functions.length;
    const term = analyzeSelect(state, obj(body.rarg) ?? {}, cteScope);
    const combined = combineBranches(state, 'SETOP_UNION', all, base, term, base[0]?.location ?? -1);
    const next = columnsOf(combined, aliases, true).map((c, i) => ({
      name: c.name,
      lineage: mergeLineages([c.lineage, (def.columns[i] as ItemColumn).lineage], NO_ORIGIN),
    }));
    if (next.every((c, i) => sameLineage(c.lineage, (def.columns[i] as ItemColumn).lineage))) return;
    def.columns = next;
    state.sink.length = usesMark;
    state.functions.length = fnMark;
  }
  unsupported(`recursive CTE ${name}: no fixpoint`, -1);
}

/**
 * Registers the CTEs of a WITH clause in `scope`, in order: each is analyzed once, where it is
 * declared, seeing only the CTEs before it (and, under RECURSIVE, itself). Its tests are recorded
 * then; its result columns carry their lineage to every reference (a CTE shadows a table of the
 * same name). A data-modifying CTE adds its write requirements and passes its RETURNING columns.
 * Throws 0A000 for SEARCH / CYCLE clauses.
 */
export function analyzeWith(state: QueryState, withClause: Obj, scope: Scope): void {
  const recursive = withClause.recursive === true;
  for (const c of list(withClause.ctes)) {
    const [k, cte] = unwrap(c);
    if (k !== 'CommonTableExpr') unsupported(`a ${k} in WITH`, loc(cte));
    if (cte.search_clause || cte.cycle_clause) unsupported('a CTE with SEARCH or CYCLE', loc(cte));
    const name = str(cte.ctename);
    const aliases = names(cte.aliascolnames);
    const cteScope: Scope = { parent: scope.parent, namespace: [], ctes: scope.ctes };
    const [qk, q] = unwrap(cte.ctequery, loc(cte));
    if (qk === 'SelectStmt' && recursive && str(q.op) === 'SETOP_UNION' && !q.withClause) {
      recursiveCte(state, scope, cteScope, name, aliases, q);
      continue;
    }
    let out: OutColumn[];
    if (qk === 'SelectStmt') out = analyzeSelect(state, q, cteScope);
    else out = analyzeDml(state, qk, q, cteScope).columns;
    scope.ctes.set(name, { name, columns: columnsOf(out, aliases, false), recursive: false });
  }
}

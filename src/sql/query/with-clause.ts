// WITH: CTEs in order (each sees the earlier ones), data-modifying CTEs, and WITH RECURSIVE by fixpoint.

import { checkDistinctNames, recursiveWithOrder } from './cte-dependencies.js';
import { analyzeDml } from './dml.js';
import { QueryRefusal, unsupported } from './errors.js';
import { walkExpr } from './expression.js';
import {
  computedFrom,
  consume,
  type Lineage,
  mergeLineages,
  NO_ORIGIN,
  passUp,
  sameLineage,
} from './lineage.js';
import { list, loc, names, type Obj, obj, str, unwrap } from './node-kinds.js';
import { type CteDef, type ItemColumn, newScope, type Scope } from './scope.js';
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
 * A recursive CTE `[WITH …] base UNION [ALL] recursive-term`: the body's own WITH is analyzed
 * first (visible to both terms; it must not reference the CTE), then the base term (nor may it),
 * whose columns are registered; then the recursive term is analyzed again until the CTE's lineage
 * (sources, deferred uses and whole rows) stops changing — a fixpoint, never an unrolling; uses
 * recorded by a pass that changed the lineage are discarded. Throws 42P19 for a body that is not
 * a UNION (Postgres's message) and 0A000 for ORDER BY / LIMIT / OFFSET / FOR UPDATE on it.
 * Source: parse_cte.c checkWellFormedRecursion, transformSetOperationStmt.
 */
function recursiveCte(
  state: QueryState,
  scope: Scope,
  cteScope: Scope,
  name: string,
  aliases: string[],
  body: Obj,
  location: number,
): void {
  if (str(body.op) !== 'SETOP_UNION')
    throw new QueryRefusal(
      '42P19',
      `recursive query "${name}" does not have the form non-recursive-term UNION [ALL] recursive-term`,
      location,
    );
  for (const [field, what] of [
    ['sortClause', 'ORDER BY'],
    ['limitOffset', 'OFFSET'],
    ['limitCount', 'LIMIT'],
    ['lockingClause', 'FOR UPDATE/SHARE'],
  ] as const) {
    if (body[field] !== undefined && list(body[field]).length !== 0)
      unsupported(`${what} in a recursive query`, location);
  }
  scope.ctes.set(name, {
    name,
    columns: [],
    recursive: true,
    pending: `recursive reference to query "${name}" must not appear within its non-recursive term`,
  });
  let termScope = cteScope;
  const own = obj(body.withClause);
  if (own) {
    termScope = newScope(cteScope);
    analyzeWith(state, own, termScope);
  }
  const base = analyzeSelect(state, obj(body.larg) ?? {}, termScope);
  const def: CteDef = { name, columns: columnsOf(base, aliases, true), recursive: true, location };
  scope.ctes.set(name, def);
  const all = body.all === true;
  for (let pass = 0; pass < MAX_PASSES; pass++) {
    const usesMark = state.sink.length;
    const fnMark = state.functions.length;
    const term = analyzeSelect(state, obj(body.rarg) ?? {}, termScope);
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

/** The CTE column `n` names (42601 when none, as Postgres: "… column not in WITH query column list"). */
function cteColumn(def: CteDef, n: string, what: string, location: number): ItemColumn {
  const c = def.columns.find((x) => x.name === n);
  if (!c) throw new QueryRefusal('42601', `${what} column "${n}" not in WITH query column list`, location);
  return c;
}

/** Adds a column named `n` to the CTE (a name already used makes references to it ambiguous, as in Postgres). */
function addColumn(def: CteDef, n: string, lineage: Lineage): void {
  def.columns.push({ name: n, lineage });
}

/**
 * SEARCH { DEPTH | BREADTH } FIRST BY cols SET seq, CYCLE cols SET mark [TO v DEFAULT d] USING path
 * on a recursive CTE (Postgres 15 rewriteSearchAndCycle). The named columns are ordered (SEARCH)
 * or compared (CYCLE): `test` uses in SEARCH / CYCLE. The added columns carry those values —
 * the sequence column and the path column are arrays of rows of them, the mark column the
 * outcome of comparing them — so each is computed from the named columns (deferred `compute`
 * uses, origin 0). The mark value and default are compute uses. Throws 42601 for a column the
 * CTE does not have.
 */
function addSearchCycleColumns(state: QueryState, scope: Scope, def: CteDef, cte: Obj): void {
  const search = obj(cte.search_clause);
  const cycle = obj(cte.cycle_clause);
  const env = { state, scope };
  if (search) {
    const at = loc(search);
    const cols = names(search.search_col_list).map((n) => cteColumn(def, n, 'search', at));
    for (const c of cols) consume(state, c.lineage, { kind: 'test', clause: 'SEARCH' }, at);
    const seq = computedFrom(
      state,
      cols.map((c) => c.lineage),
      'SEARCH',
      at,
    );
    addColumn(def, str(search.search_seq_column), seq);
  }
  if (cycle) {
    const at = loc(cycle);
    const cols = names(cycle.cycle_col_list).map((n) => cteColumn(def, n, 'cycle', at));
    for (const c of cols) consume(state, c.lineage, { kind: 'test', clause: 'CYCLE' }, at);
    walkExpr(env, cycle.cycle_mark_value, { kind: 'compute', context: 'CYCLE' });
    walkExpr(env, cycle.cycle_mark_default, { kind: 'compute', context: 'CYCLE' });
    const derived = computedFrom(
      state,
      cols.map((c) => c.lineage),
      'CYCLE',
      at,
    );
    addColumn(def, str(cycle.cycle_mark_column), derived);
    addColumn(def, str(cycle.cycle_path_column), derived);
  }
}

/**
 * Registers the CTEs of a WITH clause in `scope`. Plain WITH: in order, each analyzed once where
 * it is declared, seeing only the CTEs before it. WITH RECURSIVE: every item is visible to every
 * other from the start (a reference to a later item named like a table is that item, not the
 * table), they are analyzed in Postgres's dependency order (cte-dependencies.ts), and an item is
 * recursive exactly when it references itself (inner WITHs of the same name capture the name).
 * Each item's tests are recorded when it is analyzed; its result columns carry their lineage to
 * every reference (a CTE shadows a table of the same name). A data-modifying CTE adds its write
 * requirements and passes its RETURNING columns. SEARCH / CYCLE add their columns
 * (addSearchCycleColumns); on anything but a recursive UNION they are refused 0A000 (Postgres
 * refuses them there too). Throws 42712 for a name given twice, 0A000 for mutual recursion.
 * Source: parse_cte.c transformWithClause.
 */
export function analyzeWith(state: QueryState, withClause: Obj, scope: Scope): void {
  const recursive = withClause.recursive === true;
  const ctes = list(withClause.ctes).map((c) => {
    const [k, cte] = unwrap(c);
    if (k !== 'CommonTableExpr') unsupported(`a ${k} in WITH`, loc(cte));
    return cte;
  });
  const items = ctes.map((cte) => ({ name: str(cte.ctename), query: cte.ctequery, location: loc(cte) }));
  const { order, selfReferencing } = recursive
    ? recursiveWithOrder(items)
    : { order: ctes.map((_, i) => i), selfReferencing: new Set<number>() };
  checkDistinctNames(items);
  if (recursive) {
    for (const it of items)
      scope.ctes.set(it.name, {
        name: it.name,
        columns: [],
        recursive: false,
        pending: `WITH query "${it.name}" is referenced before pgwarden analyzed it`,
      });
  }
  for (const i of order) {
    const cte = ctes[i] as Obj;
    const searchCycle = Boolean(cte.search_clause || cte.cycle_clause);
    const name = str(cte.ctename);
    state.defineCte(name, loc(cte));
    const aliases = names(cte.aliascolnames);
    const cteScope: Scope = { parent: scope.parent, namespace: [], ctes: scope.ctes };
    const [qk, q] = unwrap(cte.ctequery, loc(cte));
    if (selfReferencing.has(i)) {
      if (qk !== 'SelectStmt')
        throw new QueryRefusal(
          '0A000',
          `recursive query "${name}" must not contain data-modifying statements`,
          loc(cte),
        );
      recursiveCte(state, scope, cteScope, name, aliases, q, loc(cte));
      const def = scope.ctes.get(name);
      if (def && searchCycle) addSearchCycleColumns(state, cteScope, def, cte);
      continue;
    }
    if (searchCycle)
      unsupported(`SEARCH or CYCLE on WITH query ${name}, which is not a recursive UNION`, loc(cte));
    let out: OutColumn[];
    if (qk === 'SelectStmt') out = analyzeSelect(state, q, cteScope);
    else out = analyzeDml(state, qk, q, cteScope).columns;
    scope.ctes.set(name, {
      name,
      columns: columnsOf(out, aliases, false),
      recursive: false,
      location: loc(cte),
    });
  }
}

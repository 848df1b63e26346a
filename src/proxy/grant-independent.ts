// Whether a statement's PostgreSQL privileges are untouched by a grant sync that runs (issue 15): a set login's plain read of relations the sync leaves as they are goes on without waiting for it.
import { FIRST_NORMAL_OID } from '../catalog/catalog-changes.js';
import { type Catalog, type CatalogRelation, catalogKey } from '../catalog/types.js';
import type { Analysis } from '../sql/analysis-types.js';

/**
 * Whether every statement of `analysis` (analyzed under `catalog`) is a plain read whose
 * privilege checks in PostgreSQL touch none of the relations `changed` (OIDs whose grants a grant
 * sync to `catalog` may still change; roles/grant-scope.ts): a SELECT (no session effect, no write
 * in a CTE: every requirement is SELECT on a relation or column), every relation it names or reads
 * through a view known to `catalog` and outside `changed`, every column it uses of a system type
 * (an operator or cast on a user type may run user code, which may read anything), every function
 * it calls a system one (below FIRST_NORMAL_OID) that is not volatile (nextval and setval take
 * USAGE and UPDATE on sequences a sync may change). Wall 3 (the set login's PostgreSQL grants)
 * is then what the sync leaves on what the statement reads. False for an analysis refused, or
 * empty. Pure.
 *
 * Not seen: what row-level security policies of the relations it reads run (their subqueries
 * run with the login's privileges): their text is the policy owner's, written before the change.
 */
export function readsNoneOf(analysis: Analysis, catalog: Catalog, changed: ReadonlySet<number>): boolean {
  if (analysis.refusal || analysis.statements.length === 0) return false;
  const unchanged = (schema: string, table: string): CatalogRelation | undefined => {
    const rel = catalog.relations.get(catalogKey(schema, table));
    return rel && !changed.has(rel.oid) ? rel : undefined;
  };
  for (const st of analysis.statements) {
    if (st.refusal || st.kind !== 'SELECT' || st.sessionEffects.length > 0) return false;
    for (const r of st.requirements) {
      if (r.action !== 'SELECT' || r.object.level === 'database') return false;
      if (!unchanged(r.object.schema, r.object.table)) return false;
    }
    for (const u of st.uses) {
      const rel = unchanged(u.schema, u.table);
      if (!rel) return false;
      if (u.use === 'whole-row') {
        if (rel.columns.some((c) => c.typeOid >= FIRST_NORMAL_OID)) return false;
      } else {
        const col = rel.columns.find((c) => c.name === u.column);
        if (!col || col.typeOid >= FIRST_NORMAL_OID) return false;
      }
    }
    for (const f of st.functions) {
      if (f.oid >= FIRST_NORMAL_OID) return false;
      const fn = catalog.functions.get(catalogKey(f.schema, f.name))?.find((x) => x.oid === f.oid);
      if (!fn || fn.volatility === 'volatile') return false;
    }
  }
  return true;
}

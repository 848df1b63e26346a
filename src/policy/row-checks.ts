// Writes whose outcome the server decides over hidden columns of every row they touch: user triggers, row-level security policies, NOT VALID CHECKs.
import type { Catalog, CatalogConstraint, CatalogRelation, WriteEvent } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
import type { StatementAnalysis } from '../sql/analysis-types.js';
import { catalogIndex } from './hidden-columns.js';
import { shortName } from './refusal-messages.js';

/** One write of a statement that would answer a question about a hidden value, and why. */
export interface RowCheckOracle {
  /** The relation whose rows the write changes (the statement's target or a descendant of it). */
  readonly relation: CatalogRelation;
  readonly event: Exclude<WriteEvent, 'INSERT'>;
  /** What the server evaluates over the row: a trigger, a policy, or a CHECK constraint added NOT VALID. */
  readonly guard: CatalogConstraint;
  /** A hidden column of `relation` that `guard` reads. */
  readonly column: string;
  /** Character offset of the write's requirement (its target), for POSITION. */
  readonly location: number | undefined;
}

/** Whether `guard` runs over every row an `event` write touches, whichever columns the write names. */
function runsOnEveryRow(guard: CatalogConstraint, event: WriteEvent): boolean {
  if (guard.kind === 'trigger' || guard.kind === 'policy') return guard.events?.includes(event) === true;
  return guard.kind === 'check' && guard.validated === false && event === 'UPDATE';
}

/** `rel` and its inheritance descendants and partitions: an UPDATE or DELETE of it reaches their rows too. */
function withDescendants(catalog: Catalog, rel: CatalogRelation): CatalogRelation[] {
  const { children } = catalogIndex(catalog);
  const out = new Map<number, CatalogRelation>([[rel.oid, rel]]);
  const down = [...(children.get(rel.oid) ?? [])];
  while (down.length > 0) {
    const c = down.pop() as CatalogRelation;
    if (out.has(c.oid)) continue;
    out.set(c.oid, c);
    down.push(...(children.get(c.oid) ?? []));
  }
  return [...out.values()];
}

/**
 * The UPDATEs and DELETEs of statement `s` (its table-level requirements: an INSERT … ON CONFLICT
 * DO UPDATE and a MERGE with WHEN MATCHED … UPDATE need UPDATE) on a relation where the server
 * evaluates, for every row the write changes and whichever columns it names, something that reads
 * a column hidden from the caller (`isHidden`):
 * - a user trigger on that event: its function gets the whole row (OLD and NEW), and whether it
 *   raises, or what it does, may follow any value in it;
 * - a row-level security policy for that event whose USING or WITH CHECK reads the column: an
 *   update fails (42501) or a row is skipped depending on the stored value;
 * - a CHECK constraint added NOT VALID that reads it: stored rows may fail it, and Postgres checks
 *   every CHECK on every row an UPDATE stores, so the update of such a row fails (23514).
 * Each answers "does this row's hidden value satisfy …" by the write's success or row count
 * (seed 004 "Hiding a column": the row count of an update filtered the same way answers it just
 * as well). A plain INSERT is not one: its row holds only the caller's values. Descendants count
 * (an UPDATE of a parent reaches its children's rows). Output: one oracle per write found (the
 * first guard and column), in requirement order; empty when there is none.
 * Source: PostgreSQL 15 ExecConstraints (execMain.c: every CHECK of the relation per stored row),
 * ExecWithCheckOptions, trigger.c; DESIGN.md "Writes as reads".
 */
export function rowCheckOracles(
  s: StatementAnalysis,
  catalog: Catalog,
  isHidden: (schema: string, table: string, column: string) => boolean,
): RowCheckOracle[] {
  const out: RowCheckOracle[] = [];
  const seen = new Set<string>();
  for (const r of s.requirements) {
    if ((r.action !== 'UPDATE' && r.action !== 'DELETE') || r.object.level !== 'table') continue;
    const key = `${r.action}\0${r.object.schema}\0${r.object.table}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const target = catalog.relations.get(catalogKey(r.object.schema, r.object.table));
    if (!target) continue;
    const found = (() => {
      for (const rel of withDescendants(catalog, target)) {
        for (const guard of rel.constraints ?? []) {
          if (!runsOnEveryRow(guard, r.action)) continue;
          const column = guard.columns.find((c) => isHidden(rel.schema, rel.name, c));
          if (column !== undefined) return { relation: rel, guard, column };
        }
      }
      return undefined;
    })();
    if (found) out.push({ ...found, event: r.action, location: r.location });
  }
  return out;
}

/** The MESSAGE of a refusal for `o`: what is refused, and which guard reads which hidden column. */
export function rowCheckMessage(o: RowCheckOracle): string {
  const rel = shortName(o.relation.schema, o.relation.name);
  const verb = o.event === 'UPDATE' ? 'updated' : 'deleted';
  const noun = o.event === 'UPDATE' ? 'update' : 'delete';
  const why =
    o.guard.kind === 'trigger'
      ? `the trigger ${o.guard.name} gets every row it runs on, ${o.column} included`
      : o.guard.kind === 'policy'
        ? `the row-level security policy ${o.guard.name} reads ${o.column} of every row`
        : `the CHECK constraint ${o.guard.name}, added NOT VALID, reads ${o.column}, and stored rows may fail it`;
  return `rows of ${rel} cannot be ${verb}: ${why}; ${o.column} is hidden from you, so the ${noun}'s success or row count would tell something about its values`;
}

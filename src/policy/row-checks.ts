// Writes whose outcome the server decides over hidden columns of every row they touch: user triggers, row-level security policies, rules, NOT VALID CHECKs, generated columns.
import type { Catalog, CatalogConstraint, CatalogRelation, WriteEvent } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
import type { ColumnUse, StatementAnalysis } from '../sql/analysis-types.js';
import { catalogIndex } from './hidden-columns.js';
import { shortName } from './refusal-messages.js';

/** One write of a statement that would answer a question about a hidden value, and why. */
export interface RowCheckOracle {
  /** The relation whose rows the write changes (the statement's target or a descendant of it). */
  readonly relation: CatalogRelation;
  readonly event: WriteEvent;
  /** What the server evaluates over the row: a trigger, a policy, a rule, or a CHECK constraint added NOT VALID. */
  readonly guard: CatalogConstraint;
  /** The relation holding `column`: `relation`, or for a rule another relation it reads. */
  readonly columnOf: { readonly schema: string; readonly table: string };
  /** A hidden column that `guard` reads. */
  readonly column: string;
  /** Character offset of the write's requirement (its target), for POSITION. */
  readonly location: number | undefined;
}

/** Whether `guard` runs over every row an `event` write touches, whichever columns the write names. */
function runsOnEveryRow(guard: CatalogConstraint, event: WriteEvent): boolean {
  // A rule's condition and actions may read stored rows even on INSERT (they are queries).
  if (guard.kind === 'rule') return guard.events?.includes(event) === true;
  if (event === 'INSERT') return false;
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
 *   every CHECK on every row an UPDATE stores, so the update of such a row fails (23514);
 * - a rule on that event (INSERT included: its condition and actions are queries that may read
 *   stored rows) over the relation's row, or naming another relation with a hidden column: the
 *   rewriter adds its condition and actions to the statement (`DO INSTEAD NOTHING WHERE old.ssn
 *   LIKE '9%'` makes the row count the answer), run with the rule owner's privileges.
 * Each answers "does this row's hidden value satisfy …" by the write's success or row count
 * (seed 004 "Hiding a column": the row count of an update filtered the same way answers it just
 * as well). A plain INSERT is not one (rules aside): its row holds only the caller's values. Descendants count
 * (an UPDATE of a parent reaches its children's rows). Output: one oracle per write found (the
 * first guard and column), in requirement order; empty when there is none.
 * Source: PostgreSQL 15 ExecConstraints (execMain.c: every CHECK of the relation per stored row),
 * ExecWithCheckOptions, trigger.c, rewriteHandler.c (fireRules); DESIGN.md "Writes as reads".
 */
export function rowCheckOracles(
  s: StatementAnalysis,
  catalog: Catalog,
  isHidden: (schema: string, table: string, column: string) => boolean,
): RowCheckOracle[] {
  const out: RowCheckOracle[] = [];
  const seen = new Set<string>();
  for (const r of s.requirements) {
    if (
      (r.action !== 'UPDATE' && r.action !== 'DELETE' && r.action !== 'INSERT') ||
      r.object.level !== 'table'
    )
      continue;
    const key = `${r.action}\0${r.object.schema}\0${r.object.table}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const target = catalog.relations.get(catalogKey(r.object.schema, r.object.table));
    if (!target) continue;
    const found = (() => {
      const action = r.action as WriteEvent;
      // An INSERT reaches the named relation only (its rows are routed, not searched).
      for (const rel of action === 'INSERT' ? [target] : withDescendants(catalog, target)) {
        for (const guard of rel.constraints ?? []) {
          if (!runsOnEveryRow(guard, action)) continue;
          const column = guard.columns.find((c) => isHidden(rel.schema, rel.name, c));
          if (column !== undefined)
            return { relation: rel, guard, column, columnOf: { schema: rel.schema, table: rel.name } };
          for (const [schema, table] of guard.reads ?? []) {
            const other = catalog.relations.get(catalogKey(schema, table));
            const hidden = other?.columns.find((c) => isHidden(schema, table, c.name));
            if (hidden) return { relation: rel, guard, column: hidden.name, columnOf: { schema, table } };
          }
        }
      }
      return undefined;
    })();
    if (found) out.push({ ...found, event: r.action as WriteEvent, location: r.location });
  }
  return out;
}

/** The MESSAGE of a refusal for `o`: what is refused, and which guard reads which hidden column. */
export function rowCheckMessage(o: RowCheckOracle): string {
  const rel = shortName(o.relation.schema, o.relation.name);
  const verb = o.event === 'UPDATE' ? 'updated' : o.event === 'DELETE' ? 'deleted' : 'inserted';
  const noun = o.event.toLowerCase();
  const col =
    o.columnOf.schema === o.relation.schema && o.columnOf.table === o.relation.name
      ? o.column
      : shortName(o.columnOf.schema, o.columnOf.table, o.column);
  const why =
    o.guard.kind === 'trigger'
      ? `the trigger ${o.guard.name} gets every row it runs on, ${col} included`
      : o.guard.kind === 'policy'
        ? `the row-level security policy ${o.guard.name} reads ${col} of every row`
        : o.guard.kind === 'rule'
          ? `the rule ${o.guard.name} adds its condition and actions to the ${noun}, and they may read ${col}`
          : `the CHECK constraint ${o.guard.name}, added NOT VALID, reads ${col}, and stored rows may fail it`;
  return `rows of ${rel} cannot be ${verb}: ${why}; ${col} is hidden from you, so the ${noun}'s success or row count would tell something about its values`;
}

/** A write to a generated column's input that makes the server compute it again over a hidden column. */
export interface GeneratedOracle {
  /** The write-target use (the column written). */
  readonly use: ColumnUse & { readonly use: 'write-target' };
  /** The relation holding the generated column (the target or a descendant). */
  readonly relation: CatalogRelation;
  /** The stored generated column computed again. */
  readonly generated: string;
  /** A hidden input of `generated` that the statement does not write itself. */
  readonly column: string;
}

/**
 * The UPDATE writes of statement `s` (`updatesRows`: an UPDATE, MERGE, or INSERT … ON CONFLICT DO
 * UPDATE) to a column that a stored generated column reads together with a column hidden from the
 * caller (`isHidden`) that the statement does not write itself: Postgres computes the generated
 * column again for every row the write changes (ExecComputeStoredGenerated, for the generated
 * columns that depend on an updated column), over the stored hidden value, and an expression
 * that can fail (`length(name) / ssn`: 22012 for a zero, a cast, an overflow) makes the write's
 * success the answer. A plain INSERT is not one: its row holds only the caller's values and
 * defaults. Descendants count (an inherited or partition column may have its own expression).
 * Output: one oracle per (write-target use, relation), the first generated column and hidden
 * input found. Source: PostgreSQL 15 nodeModifyTable.c; DESIGN.md "Derived values".
 */
export function generatedOracles(
  s: StatementAnalysis,
  catalog: Catalog,
  isHidden: (schema: string, table: string, column: string) => boolean,
  updatesRows: boolean,
): GeneratedOracle[] {
  if (!updatesRows) return [];
  const written = new Set<string>();
  for (const u of s.uses) if (u.use === 'write-target') written.add(`${u.schema}\0${u.table}\0${u.column}`);
  const out: GeneratedOracle[] = [];
  for (const use of s.uses) {
    if (use.use !== 'write-target') continue;
    const target = catalog.relations.get(catalogKey(use.schema, use.table));
    if (!target) continue;
    for (const rel of withDescendants(catalog, target)) {
      const found = (() => {
        for (const g of rel.columns) {
          if (g.generated === null || !g.generatedFrom.includes(use.column)) continue;
          const column = g.generatedFrom.find(
            (c) =>
              c !== use.column &&
              isHidden(rel.schema, rel.name, c) &&
              !written.has(`${use.schema}\0${use.table}\0${c}`),
          );
          if (column !== undefined) return { generated: g.name, column };
        }
        return undefined;
      })();
      if (found) {
        out.push({ use, relation: rel, ...found });
        break;
      }
    }
  }
  return out;
}

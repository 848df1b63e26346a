// Which relations' grants a catalog change can alter: what changed between two catalogs, and every relation whose grant plan reads it.
import crypto from 'node:crypto';
import { FIRST_NORMAL_OID } from '../catalog/catalog-changes.js';
import type { Catalog, CatalogRelation } from '../catalog/types.js';

/** Past this share of the user relations, an incremental sync costs about what a full one does. */
const FULL_SHARE = 0.5;

/**
 * The relations (by OID, in either catalog) whose grants may differ between `before` and `after`
 * for any policy, or `full` with the reason when the change cannot be scoped to relations (the
 * grants must then be synced in full). Pure.
 *
 * Changed relations: one present in only one of the catalogs, or whose value differs — by identity
 * when `after` was read on top of `before` (an incremental catalog read keeps the values of
 * relations it did not read again, so a relation read again because its defaults, owner or
 * indexes changed counts even when the Catalog shows no difference), by content otherwise. When
 * user functions changed, every view and materialized view counts as changed (their definitions
 * may call them); so does every view when user types changed other than the row types of changed
 * relations.
 *
 * Then every relation whose grant plan (grant-plan.ts planRelation: the analysis and decision of
 * `SELECT`/`INSERT`/`UPDATE`/`DELETE` on it) can read what changed, transitively, in either
 * catalog: a column's hidden state follows a view's or materialized view's definition (any
 * relation whose name occurs in its text), inheritance ancestors and descendants (partitions), and
 * the row type of a column's type (hidden-columns.ts); a write's decision reads the hidden state of
 * the relations its foreign keys reference and of those whose foreign keys reference it
 * (decide.ts, one step).
 *
 * `full` when: the catalogs are of different servers or logins, the default search_path changed
 * (plans name relations qualified, but a change is not worth the risk), a schema disappeared,
 * the types whose input runs user code changed other than row types of changed relations, or more
 * than half the user relations are in scope.
 */
export function grantScope(before: Catalog, after: Catalog): { relations: Set<number> } | { full: string } {
  if (before.serverVersionNum !== after.serverVersionNum || before.sessionUser !== after.sessionUser)
    return { full: 'another server or login' };
  if (before.defaultSearchPath.join(',') !== after.defaultSearchPath.join(','))
    return { full: 'the default search_path changed' };
  for (const n of before.namespaces) if (!after.namespaces.has(n)) return { full: `schema ${n} is gone` };

  const old = userRelations(before);
  const now = userRelations(after);
  const shared = [...now.values()].some((r) => old.get(r.oid) === r);
  const changed = new Set<number>();
  for (const [oid, r] of now) {
    const o = old.get(oid);
    if (o === r) continue;
    if (!o || shared || relationDigest(o) !== relationDigest(r)) changed.add(oid);
  }
  for (const oid of old.keys()) if (!now.has(oid)) changed.add(oid);

  // Row types (and their arrays) of changed relations: a type change there is the relation's own.
  const ownTypes = new Set<number>();
  for (const oid of changed)
    for (const r of [old.get(oid), now.get(oid)])
      for (const t of [r?.rowTypeOid, r?.rowArrayTypeOid]) if (t) ownTypes.add(t);
  const userCode = (c: Catalog) => new Set([...(c.userCodeTypeOids ?? [])].filter((t) => !ownTypes.has(t)));
  if (!sameSet(userCode(before), userCode(after)))
    return { full: 'the types whose input runs user code changed' };
  const views = (m: ReadonlyMap<number, CatalogRelation>) =>
    [...m.values()].filter((r) => r.kind === 'view' || r.kind === 'matview').map((r) => r.oid);
  if (!sameUserFunctions(before, after) || !sameUserTypes(before, after, ownTypes))
    for (const oid of [...views(old), ...views(now)]) changed.add(oid);

  const scope = dependents(changed, [old, now]);
  if (scope.size > Math.max(8, FULL_SHARE * now.size)) return { full: `${scope.size} relations in scope` };
  return { relations: scope };
}

/** The relations at or above FIRST_NORMAL_OID by OID (the system's never change without a superuser). */
function userRelations(c: Catalog): Map<number, CatalogRelation> {
  const m = new Map<number, CatalogRelation>();
  for (const r of c.relations.values()) if (r.oid >= FIRST_NORMAL_OID) m.set(r.oid, r);
  return m;
}

const digests = new WeakMap<CatalogRelation, string>();

/** What a relation's grant plan reads of the relation itself, as one string (memoized per value). */
function relationDigest(r: CatalogRelation): string {
  let d = digests.get(r);
  if (d === undefined) {
    d = JSON.stringify([
      r.schema,
      r.name,
      r.kind,
      r.viewDefinition,
      r.columns,
      r.constraints ?? null,
      r.rowTypeOid ?? null,
      r.rowArrayTypeOid ?? null,
      r.hasChildren ?? null,
      r.parents ?? null,
    ]);
    digests.set(r, d);
  }
  return d;
}

function sameSet<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

/** Whether the user functions (OID ≥ FIRST_NORMAL_OID) are the same values or the same content. */
function sameUserFunctions(a: Catalog, b: Catalog): boolean {
  // An incremental read that did not read functions again hands on the earlier read's very map.
  if (a.functions === b.functions) return true;
  const list = (c: Catalog) => [...c.functions.values()].flat().filter((f) => f.oid >= FIRST_NORMAL_OID);
  const [x, y] = [list(a), list(b)];
  if (x.length !== y.length) return false;
  const same = new Set(x);
  if (y.every((f) => same.has(f))) return true;
  const digest = (fs: typeof x) =>
    crypto
      .createHash('sha256')
      .update(JSON.stringify([...fs].sort((p, q) => p.oid - q.oid)))
      .digest('hex');
  return digest(x) === digest(y);
}

/** Whether the user types are the same, leaving out the row types `own` (of changed relations). */
function sameUserTypes(a: Catalog, b: Catalog, own: ReadonlySet<number>): boolean {
  if (a.types === b.types) return true;
  const text = (c: Catalog) =>
    [...(c.types?.values() ?? [])]
      .filter((t) => t.oid >= FIRST_NORMAL_OID && !own.has(t.oid))
      .map((t) => `${t.oid}|${t.schema}|${t.name}|${t.why ?? ''}`)
      .sort()
      .join('\n');
  return text(a) === text(b);
}

/**
 * `changed` and every relation whose grant plan reads one of them (see {@link grantScope}), over
 * the relations of all `catalogs` (by OID). View definitions are searched only for the names of
 * relations reached (a view per relation reached, not every pair).
 */
function dependents(
  changed: ReadonlySet<number>,
  catalogs: readonly ReadonlyMap<number, CatalogRelation>[],
): Set<number> {
  // Edges "x's hidden state reads y" other than through view definitions: y → [x…].
  const readers = new Map<number, Set<number>>();
  const add = (m: Map<number, Set<number>>, y: number, x: number) => {
    if (x === y) return;
    const s = m.get(y) ?? new Set<number>();
    m.set(y, s);
    s.add(x);
  };
  // Foreign keys, both ways: a write to either end reads the other's hidden state.
  const fk = new Map<number, Set<number>>();
  const names = new Map<number, Set<string>>();
  const views: CatalogRelation[] = [];
  for (const rels of catalogs) {
    const byRowType = new Map<number, number>();
    const byName = new Map<string, number>();
    for (const r of rels.values()) {
      if (r.rowTypeOid) byRowType.set(r.rowTypeOid, r.oid);
      if (r.rowArrayTypeOid) byRowType.set(r.rowArrayTypeOid, r.oid);
      byName.set(`${r.schema}.${r.name}`, r.oid);
      const n = names.get(r.oid) ?? new Set<string>();
      names.set(r.oid, n);
      n.add(r.name);
      if (r.viewDefinition !== null) views.push(r);
    }
    for (const r of rels.values()) {
      for (const p of r.parents ?? []) {
        add(readers, p, r.oid);
        add(readers, r.oid, p);
      }
      for (const c of r.columns) {
        const of = byRowType.get(c.typeOid);
        if (of !== undefined) add(readers, of, r.oid);
      }
      for (const k of r.constraints ?? []) {
        const ref = k.references && byName.get(`${k.references.schema}.${k.references.table}`);
        if (ref === undefined) continue;
        add(fk, r.oid, ref);
        add(fk, ref, r.oid);
      }
    }
  }
  // A view reads every relation whose name occurs in its printed definition (identifiers are
  // printed as quote_ident does: inside double quotes, a double quote doubled).
  const viewsReading = (oid: number): number[] => {
    const out: number[] = [];
    for (const name of names.get(oid) ?? []) {
      const quoted = name.replaceAll('"', '""');
      for (const v of views) {
        const def = v.viewDefinition as string;
        if (v.oid !== oid && (def.includes(name) || def.includes(quoted))) out.push(v.oid);
      }
    }
    return out;
  };
  const hidden = new Set<number>(changed);
  const todo = [...changed];
  while (todo.length > 0) {
    const y = todo.pop() as number;
    for (const x of [...(readers.get(y) ?? []), ...viewsReading(y)]) {
      if (hidden.has(x)) continue;
      hidden.add(x);
      todo.push(x);
    }
  }
  const out = new Set(hidden);
  for (const y of hidden) for (const x of fk.get(y) ?? []) out.add(x);
  return out;
}

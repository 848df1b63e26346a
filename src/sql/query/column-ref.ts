// Resolving a ColumnRef the way Postgres's transformColumnRef does: columns outwards first, then whole rows.
import { QueryRefusal, unsupported } from './errors.js';
import { UNTRACEABLE } from './lineage.js';
import { type Obj, unwrap } from './node-kinds.js';
import { type FromItem, findItem, type ItemColumn, type Scope } from './scope.js';
import { systemColumn } from './system-columns.js';

/** What a ColumnRef denotes: a column of a FROM item, a FROM item's whole row, or a star over items. */
export type Resolved =
  | { readonly kind: 'column'; readonly item: FromItem; readonly column: ItemColumn }
  | { readonly kind: 'row'; readonly item: FromItem }
  | { readonly kind: 'star'; readonly items: readonly FromItem[] };

function openColumn(name: string): ItemColumn {
  return { name, lineage: UNTRACEABLE };
}

/** The columns named `name` among the items whose columns are visible at one level. */
function matchesAtLevel(
  scope: Scope,
  name: string,
  location: number,
): { hits: [FromItem, ItemColumn][]; open: FromItem | null } {
  const hits: [FromItem, ItemColumn][] = [];
  let open: FromItem | null = null;
  for (const ns of scope.namespace) {
    if (!ns.colsVisible) continue;
    if (ns.item.open) open ??= ns.item;
    const before = hits.length;
    for (const c of ns.item.columns) if (c.name === name) hits.push([ns.item, c]);
    const sys = hits.length === before ? systemColumn(ns.item, name, location) : null;
    if (sys) hits.push([ns.item, sys]);
  }
  return { hits, open };
}

/**
 * An unqualified column name: the nearest level with a FROM item holding that column wins
 * (42702 when two items at that level hold it); a function whose columns the catalog does not
 * describe catches a name only when no level holds it as a known column.
 */
function resolveBareColumn(scope: Scope, name: string, location: number): Resolved | undefined {
  for (let s: Scope | null = scope; s; s = s.parent) {
    const { hits, open } = matchesAtLevel(s, name, location);
    if (hits.length > 1) throw new QueryRefusal('42702', `column reference "${name}" is ambiguous`, location);
    const hit = hits[0];
    // A function whose columns the catalog does not describe may also have a column named like
    // a system column (a composite type may): Postgres would find both.
    if (hit && open && hit[1].lineage.origin.attnum < 0 && hit[1].lineage.sources.length === 0)
      unsupported(`column reference "${name}": it may be a column of function ${open.refname}`, location);
    if (hit) return { kind: 'column', item: hit[0], column: hit[1] };
    if (open) {
      for (let o = s.parent; o; o = o.parent) {
        if (matchesAtLevel(o, name, location).hits.length > 0) {
          unsupported(
            `column reference "${name}": it may be a column of function ${open.refname} or of an outer query`,
            location,
          );
        }
      }
      return { kind: 'column', item: open, column: openColumn(name) };
    }
  }
  return undefined;
}

/**
 * Whether a bare `name` is a column of a FROM item at `scope`'s own level, not searching outer
 * levels: `yes`, `no`, or `maybe` when only a function whose columns the catalog does not
 * describe could hold it. Throws 42702 when two items at this level hold it (colNameToVar).
 * Source: Postgres findTargetlistEntrySQL92 for GROUP BY (`colNameToVar(pstate, name, true, …)`:
 * local FROM columns, then output names, then outer levels).
 */
export function localColumn(scope: Scope, name: string, location: number): 'yes' | 'no' | 'maybe' {
  const { hits, open } = matchesAtLevel(scope, name, location);
  if (hits.length > 1) throw new QueryRefusal('42702', `column reference "${name}" is ambiguous`, location);
  if (hits.length === 1) return 'yes';
  return open ? 'maybe' : 'no';
}

function columnOf(item: FromItem, name: string, location: number): Resolved {
  const cols = item.columns.filter((c) => c.name === name);
  if (cols.length > 1)
    throw new QueryRefusal('42702', `column reference "${item.refname}.${name}" is ambiguous`, location);
  const c = cols[0];
  if (c) return { kind: 'column', item, column: c };
  const sys = systemColumn(item, name, location);
  if (sys) return { kind: 'column', item, column: sys };
  if (item.open) return { kind: 'column', item, column: openColumn(name) };
  // Postgres reads `t.f` with no column f as the function call f(t) (transformColumnRef, case 2):
  // pgwarden does not follow it there.
  throw new QueryRefusal(
    '42703',
    `column ${item.refname}.${name} does not exist`,
    location,
    `Postgres would read ${item.refname}.${name} as the function call ${name}(${item.refname}); write it that way`,
  );
}

function missingItem(name: string, location: number): never {
  throw new QueryRefusal('42P01', `missing FROM-clause entry for table "${name}"`, location);
}

/** The items a bare `*` covers: every item with visible columns at this level, in FROM order. */
function starItems(scope: Scope, location: number): FromItem[] {
  const items = scope.namespace.filter((ns) => ns.colsVisible).map((ns) => ns.item);
  if (items.length === 0)
    throw new QueryRefusal('42601', 'SELECT * with no tables specified is not valid', location);
  return items;
}

/**
 * Resolves a ColumnRef node body in `scope`. Throws 42703 (unknown column), 42702 (ambiguous),
 * 42P01 (unknown FROM item), 0A000 (cross-database reference, an unclear function column).
 * Source: Postgres transformColumnRef — a one-part name is a column of the nearest level holding
 * it and only then a FROM item's whole row; `t.c`, `s.t.c`, `t.*`.
 */
export function resolveColumnRef(scope: Scope, ref: Obj, location: number): Resolved {
  const fields = Array.isArray(ref.fields) ? ref.fields : [];
  const parts: (string | null)[] = fields.map((f) => {
    const [k, b] = unwrap(f, location);
    if (k === 'String') return String(b.sval ?? '');
    if (k === 'A_Star') return null;
    return unsupported(`a ${k} in a column reference`, location);
  });
  const last = parts[parts.length - 1];
  if (parts.length === 1) {
    if (last === null) return { kind: 'star', items: starItems(scope, location) };
    const name = last as string;
    const col = resolveBareColumn(scope, name, location);
    if (col) return col;
    const item = findItem(scope, name, null);
    if (item) return { kind: 'row', item };
    throw new QueryRefusal('42703', `column "${name}" does not exist`, location);
  }
  if (parts.length === 2 || parts.length === 3) {
    const schema = parts.length === 3 ? parts[0] : null;
    const rel = parts[parts.length - 2];
    if (rel === null || (schema === null && parts.length === 3))
      return unsupported('a star inside a name', location);
    const item = findItem(scope, rel as string, schema ?? null) ?? missingItem(rel as string, location);
    if (last === null) return { kind: 'star', items: [item] };
    return columnOf(item, last as string, location);
  }
  return unsupported(`a ${parts.length}-part column reference (cross-database references)`, location);
}

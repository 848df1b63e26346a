// WITH RECURSIVE: which items each item references, which reference themselves, and the order Postgres analyzes them in.
import { QueryRefusal } from './errors.js';
import { list, type Obj, obj, str, unwrap } from './node-kinds.js';

/** One item of a WITH RECURSIVE list as the dependency walk sees it. */
export interface CteItem {
  readonly name: string;
  readonly query: unknown;
  readonly location: number;
}

/** The result of the walk: items in analysis order, and which of them reference themselves. */
export interface CteOrder {
  readonly order: readonly number[];
  readonly selfReferencing: ReadonlySet<number>;
}

/** The names of a WITH clause's items, in order. */
function withNames(w: Obj): string[] {
  return list(w.ctes).map((c) => str(unwrap(c)[1].ctename));
}

/**
 * Walks a raw parse tree for unqualified RangeVars naming an item of `names`, skipping names an
 * inner WITH captures: a RECURSIVE inner WITH captures all its names for its items and its body;
 * a plain one captures each name for the items after it and for its body. A WITH clause met
 * anywhere but on a SELECT is not entered (Postgres's walker skips it too).
 */
function walk(
  node: unknown,
  names: readonly string[],
  inner: readonly string[][],
  hit: (i: number) => void,
): void {
  if (Array.isArray(node)) {
    for (const n of node) walk(n, names, inner, hit);
    return;
  }
  const o = obj(node);
  if (!o) return;
  for (const [k, v] of Object.entries(o)) {
    if (k === 'RangeVar') {
      const rv = obj(v) ?? {};
      if (rv.schemaname) continue;
      const name = str(rv.relname);
      if (inner.some((l) => l.includes(name))) continue;
      const i = names.indexOf(name);
      if (i >= 0) hit(i);
      continue;
    }
    if (k === 'withClause') continue;
    // A SelectStmt, wrapped or as a set operation's branch (libpg-query leaves those unwrapped).
    if (k === 'SelectStmt' || k === 'larg' || k === 'rarg') {
      walkSelect(obj(v) ?? {}, names, inner, hit);
      continue;
    }
    walk(v, names, inner, hit);
  }
}

/** A SELECT: its own WITH first (capturing names as described at walk), then the rest. */
function walkSelect(
  body: Obj,
  names: readonly string[],
  inner: readonly string[][],
  hit: (i: number) => void,
): void {
  const w = obj(body.withClause);
  if (!w) {
    walk(body, names, inner, hit);
    return;
  }
  const ctes = list(w.ctes).map((c) => unwrap(c)[1]);
  if (w.recursive === true) {
    const all = [withNames(w), ...inner];
    for (const c of ctes) walk(c.ctequery, names, all, hit);
    walk(body, names, all, hit);
    return;
  }
  const seen: string[] = [];
  for (const c of ctes) {
    walk(c.ctequery, names, [seen, ...inner], hit);
    seen.push(str(c.ctename));
  }
  walk(body, names, [seen, ...inner], hit);
}

/** Throws 42712 when two items of one WITH share a name (Postgres: for either kind of WITH). */
export function checkDistinctNames(items: readonly CteItem[]): void {
  const names = items.map((c) => c.name);
  names.forEach((n, i) => {
    if (names.indexOf(n) !== i)
      throw new QueryRefusal(
        '42712',
        `WITH query name "${n}" specified more than once`,
        items[i]?.location ?? -1,
      );
  });
}

/**
 * Orders the items of a WITH RECURSIVE list the way Postgres does (parse_cte.c
 * makeDependencyGraph + TopologicalSort): every item is visible to every other, each is analyzed
 * after the items it references, and an item referencing itself is recursive. Throws 42712 for a
 * name given twice and 0A000 for mutual recursion (Postgres's messages).
 */
export function recursiveWithOrder(items: readonly CteItem[]): CteOrder {
  checkDistinctNames(items);
  const names = items.map((c) => c.name);
  const deps = items.map(() => new Set<number>());
  const selfReferencing = new Set<number>();
  items.forEach((c, me) => {
    walk(c.query, names, [], (i) => {
      if (i === me) selfReferencing.add(me);
      else deps[me]?.add(i);
    });
  });
  const order: number[] = [];
  const done = new Set<number>();
  while (order.length < items.length) {
    const next = items.findIndex((_, i) => !done.has(i) && [...(deps[i] ?? [])].every((d) => done.has(d)));
    if (next < 0) {
      const stuck = items.findIndex((_, i) => !done.has(i));
      throw new QueryRefusal(
        '0A000',
        'mutual recursion between WITH items is not implemented',
        items[stuck]?.location ?? -1,
      );
    }
    order.push(next);
    done.add(next);
  }
  return { order, selfReferencing };
}

/** Whether `node` references `name` as Postgres's self-reference check sees it (inner WITHs capture). */
export function referencesName(node: unknown, name: string): boolean {
  let found = false;
  walk(node, [name], [], () => {
    found = true;
  });
  return found;
}

// Scopes and FROM items: what names are visible where, mirroring Postgres's parse namespace.
import type { CatalogRelation } from '../../catalog/types.js';
import { QueryRefusal } from './errors.js';
import type { Lineage } from './lineage.js';

/** One column of a FROM item, by the name a reference uses. */
export interface ItemColumn {
  readonly name: string;
  readonly lineage: Lineage;
}

/**
 * A FROM item (Postgres's range table entry): a base or catalog relation, a view, a derived
 * table, a CTE reference, a function, VALUES, a join. `refname` is its alias or relation name;
 * `schema` is set for an unaliased relation (`public.users.id` matches it). `base` is set for a
 * relation read as stored rows (its whole-row use is a whole-row use of that table). `open` marks
 * a function whose column names the catalog does not describe: any name resolves to an
 * untraceable column of it, but only after every other item at its level (see column-ref.ts).
 */
export interface FromItem {
  readonly refname: string;
  readonly schema: string | null;
  readonly columns: readonly ItemColumn[];
  readonly base: CatalogRelation | null;
  /** The catalog relation behind the item, base or view (FOR UPDATE, whole-row origins). */
  readonly relation: CatalogRelation | null;
  readonly open: boolean;
  readonly location: number;
}

/**
 * A namespace entry (Postgres's ParseNamespaceItem): a FROM item reachable by name
 * (`relVisible`) and/or by its column names (`colsVisible`). The sides of a join stay reachable
 * by name while the join's own entry carries the columns (merged USING columns once).
 */
export interface NsItem {
  readonly item: FromItem;
  relVisible: boolean;
  colsVisible: boolean;
}

/**
 * A CTE as visible to references: its columns, and whether it is the recursive one being built.
 * `pending` is set while a WITH RECURSIVE item is visible but not analyzed yet (its base term, its
 * own WITH): a reference to it then is refused with this message (42P19, as Postgres refuses it).
 */
export interface CteDef {
  readonly name: string;
  columns: ItemColumn[];
  readonly recursive: boolean;
  readonly pending?: string;
  /** Byte offset of its CommonTableExpr in the statement's text (-1: not in the text). */
  readonly location?: number;
}

/**
 * One query level. `namespace` holds the FROM items visible to expressions at this level;
 * `parent` is the enclosing query level (correlation); `ctes` are the WITH entries declared here;
 * `resultNames` the result columns, for ORDER BY's output-name-first rule.
 */
export interface Scope {
  readonly parent: Scope | null;
  readonly namespace: NsItem[];
  readonly ctes: Map<string, CteDef>;
}

/** A new, empty query level under `parent`. */
export function newScope(parent: Scope | null, ctes = new Map<string, CteDef>()): Scope {
  return { parent, namespace: [], ctes };
}

/** The CTE `name` visible from `scope` (nearest WITH first), or undefined. */
export function findCte(scope: Scope | null, name: string): CteDef | undefined {
  for (let s = scope; s; s = s.parent) {
    const c = s.ctes.get(name);
    if (c) return c;
  }
  return undefined;
}

/**
 * Adds `items` to `scope`, refusing 42712 when a name is already used at this level
 * (Postgres: `table name "x" specified more than once`).
 */
export function addToScope(scope: Scope, items: readonly NsItem[]): void {
  for (const ns of items) {
    if (ns.relVisible) {
      const clash = scope.namespace.find((o) => o.relVisible && o.item.refname === ns.item.refname);
      if (clash && !(clash.item.schema && ns.item.schema && clash.item.schema !== ns.item.schema)) {
        throw new QueryRefusal(
          '42712',
          `table name "${ns.item.refname}" specified more than once`,
          ns.item.location,
        );
      }
    }
    scope.namespace.push(ns);
  }
}

/**
 * The FROM item a qualified reference `[schema.]refname` names, searching `scope` then outwards.
 * Returns the item and how many levels up it was found, or undefined.
 */
export function findItem(scope: Scope | null, refname: string, schema: string | null): FromItem | undefined {
  for (let s = scope; s; s = s.parent) {
    for (const ns of s.namespace) {
      if (!ns.relVisible || ns.item.refname !== refname) continue;
      if (schema !== null && ns.item.schema !== schema) continue;
      return ns.item;
    }
  }
  return undefined;
}

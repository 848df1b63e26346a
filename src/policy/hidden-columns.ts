// Which columns are hidden from a set of roles: no SEE, or generated from a column without SEE.
import type { Catalog, CatalogRelation } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
import { viewColumnUses } from '../sql/view-column-uses.js';
import type { Config } from './config-schema.js';
import { checkAction, type RuleVerdict } from './rule-match.js';

/** Schemas of the system catalogs, whose columns SEE does not govern. */
const CATALOG_SCHEMAS: ReadonlySet<string> = new Set(['pg_catalog', 'information_schema']);

/** Whether one column is hidden, and why: the SEE verdict, or the hidden column it is generated from. */
export interface ColumnVisibility {
  readonly hidden: boolean;
  /** The SEE check of the column itself (deny rule, allow rule, or default deny). */
  readonly see: RuleVerdict;
  /** For a generated column that is hidden because a column it reads is: that column's name. */
  readonly generatedFrom?: string;
  /**
   * For a column hidden because it carries a hidden column's rows: which, in words, e.g.
   * `rows of public.users.ssn` (a view or materialized view column, an inheritance parent's or
   * child's column, a partition's), `values of row type public.users` (a column of that type).
   */
  readonly carries?: string;
}

/** Relations by OID, children by parent OID, and relations by row type, per catalog value. */
interface CatalogIndex {
  readonly byOid: ReadonlyMap<number, CatalogRelation>;
  readonly children: ReadonlyMap<number, readonly CatalogRelation[]>;
  readonly byRowType: ReadonlyMap<number, CatalogRelation>;
}

const indexes = new WeakMap<Catalog, CatalogIndex>();

/** The {@link CatalogIndex} of `catalog`, built once per catalog value. */
export function catalogIndex(catalog: Catalog): CatalogIndex {
  const hit = indexes.get(catalog);
  if (hit) return hit;
  const byOid = new Map<number, CatalogRelation>();
  const children = new Map<number, CatalogRelation[]>();
  const byRowType = new Map<number, CatalogRelation>();
  for (const rel of catalog.relations.values()) {
    byOid.set(rel.oid, rel);
    for (const p of rel.parents ?? []) children.set(p, [...(children.get(p) ?? []), rel]);
    if (rel.rowTypeOid) byRowType.set(rel.rowTypeOid, rel);
    if (rel.rowArrayTypeOid) byRowType.set(rel.rowArrayTypeOid, rel);
  }
  const index = { byOid, children, byRowType };
  indexes.set(catalog, index);
  return index;
}

/** Every inheritance ancestor and descendant of `rel` (partitions and partitioned parents too). */
function relatives(index: CatalogIndex, rel: CatalogRelation): CatalogRelation[] {
  const out = new Map<number, CatalogRelation>();
  const up = [...(rel.parents ?? [])];
  while (up.length > 0) {
    const p = index.byOid.get(up.pop() as number);
    if (p && !out.has(p.oid) && p.oid !== rel.oid) {
      out.set(p.oid, p);
      up.push(...(p.parents ?? []));
    }
  }
  const down = [...(index.children.get(rel.oid) ?? [])];
  while (down.length > 0) {
    const c = down.pop() as CatalogRelation;
    if (!out.has(c.oid) && c.oid !== rel.oid) {
      out.set(c.oid, c);
      down.push(...(index.children.get(c.oid) ?? []));
    }
  }
  return [...out.values()];
}

/**
 * Answers "is this column hidden from these roles" for one database and catalog, memoized.
 * Source: seed 004 "Hiding a column" (SEE says which values a role may read; no rule means no SEE)
 * and DESIGN.md "Side channels — Derived values" (a generated column computed from a hidden column
 * is hidden too; `generatedFrom` in the catalog names what it reads).
 */
export class HiddenColumns {
  private readonly memo = new Map<string, ColumnVisibility>();

  /**
   * @param config the policy; @param roles the caller's roles; @param database the client-facing
   * database name rules are scoped by; @param catalog the upstream catalog (for generated columns
   * and for listing a table's columns).
   */
  constructor(
    private readonly config: Config,
    private readonly roles: readonly string[],
    private readonly database: string,
    private readonly catalog: Catalog,
  ) {}

  /** The visibility of `schema.table.column`. A column the catalog does not know is judged by SEE alone. */
  column(schema: string, table: string, column: string): ColumnVisibility {
    return this.visit(schema, table, column, new Set());
  }

  /** The names of the columns of `schema.table` hidden from the roles (catalog order); [] for an unknown table. */
  hiddenOf(schema: string, table: string): string[] {
    const rel = this.catalog.relations.get(catalogKey(schema, table));
    if (!rel) return [];
    return rel.columns.filter((c) => this.column(schema, table, c.name).hidden).map((c) => c.name);
  }

  private readonly relationMemo = new Map<number, ReadonlySet<string>>();

  /**
   * The columns of `rel` hidden from the roles, as a set (memoized): what the mask-at-read
   * rewrite replaces by the mask constant when it wraps a reference to `rel`.
   */
  relation(rel: CatalogRelation): ReadonlySet<string> {
    const hit = this.relationMemo.get(rel.oid);
    if (hit) return hit;
    const out = new Set(this.hiddenOf(rel.schema, rel.name));
    this.relationMemo.set(rel.oid, out);
    return out;
  }

  /**
   * Whether a column is hidden, `seen` guarding against definitions that reach themselves.
   * Hidden: no SEE on it; else generated from a hidden column; else (hidden follows the rows) the
   * same column of an inheritance ancestor or descendant is hidden by its own rule; a view or
   * materialized view column whose traced definition reads a hidden column or a whole row of a
   * relation with one (or whose definition cannot be traced); a column whose type is the row type
   * (or its array) of a relation with a hidden column.
   */
  private visit(schema: string, table: string, column: string, seen: Set<string>): ColumnVisibility {
    const key = `${schema}\0${table}\0${column}`;
    const hit = this.memo.get(key);
    if (hit) return hit;
    const direct = this.direct(schema, table, column, seen);
    let out = direct;
    const rel = this.catalog.relations.get(catalogKey(schema, table));
    if (!out.hidden && rel && !CATALOG_SCHEMAS.has(schema)) {
      for (const r of relatives(catalogIndex(this.catalog), rel)) {
        if (!r.columns.some((c) => c.name === column)) continue;
        if (this.direct(r.schema, r.name, column, seen).hidden) {
          out = { ...out, hidden: true, carries: `rows of ${r.schema}.${r.name}.${column}` };
          break;
        }
      }
    }
    if (!seen.has(key)) this.memo.set(key, out);
    return out;
  }

  /** visit() without inheritance relatives (their own rules, generated columns, views, row types). */
  private direct(schema: string, table: string, column: string, seen: Set<string>): ColumnVisibility {
    const key = `${schema}\0${table}\0${column}`;
    // System catalogs hold metadata, not rows of the workspace's tables: what of them may be read
    // is the catalog allowlist's business (pg_stats and the like need MANAGE), never SEE's.
    if (CATALOG_SCHEMAS.has(schema)) return { hidden: false, see: { granted: true } };
    const see = checkAction(this.config, this.roles, 'SEE', this.database, {
      level: 'column',
      schema,
      table,
      column,
    });
    let out: ColumnVisibility = { hidden: !see.granted, see };
    if (see.granted && !seen.has(key)) {
      seen.add(key);
      try {
        const rel = this.catalog.relations.get(catalogKey(schema, table));
        const index = rel ? rel.columns.findIndex((c) => c.name === column) : -1;
        const col = rel?.columns[index];
        for (const from of col?.generatedFrom ?? []) {
          if (this.visit(schema, table, from, seen).hidden) {
            out = { hidden: true, see, generatedFrom: from };
            break;
          }
        }
        if (!out.hidden && rel && (rel.kind === 'view' || rel.kind === 'matview')) {
          const carried = this.viewCarries(rel, index, seen);
          if (carried) out = { hidden: true, see, carries: carried };
        }
        const rowOf = col ? catalogIndex(this.catalog).byRowType.get(col.typeOid) : undefined;
        if (
          !out.hidden &&
          rowOf &&
          rowOf.columns.some((c) => this.visit(rowOf.schema, rowOf.name, c.name, seen).hidden)
        ) {
          out = { hidden: true, see, carries: `values of row type ${rowOf.schema}.${rowOf.name}` };
        }
      } finally {
        seen.delete(key);
      }
    }
    return out;
  }

  /** What hidden value a view column's definition reads, in words, or undefined when none. */
  private viewCarries(rel: CatalogRelation, index: number, seen: Set<string>): string | undefined {
    const uses = viewColumnUses(this.catalog, rel)?.[index];
    if (!uses) return `the definition of ${rel.schema}.${rel.name}, which pgwarden cannot trace`;
    for (const u of uses) {
      if (CATALOG_SCHEMAS.has(u.schema)) continue;
      if (u.use === 'whole-row') {
        const r = this.catalog.relations.get(catalogKey(u.schema, u.table));
        if (r?.columns.some((c) => this.visit(u.schema, u.table, c.name, seen).hidden)) {
          return `whole rows of ${u.schema}.${u.table}`;
        }
      } else if (this.visit(u.schema, u.table, u.column, seen).hidden) {
        return `rows of ${u.schema}.${u.table}.${u.column}`;
      }
    }
    return undefined;
  }
}

/**
 * True when `roles` see every column of `database`: SEE is granted at the database level and no
 * rule of theirs denies SEE anywhere in it. Used to decide whether an error whose statement names
 * no hidden column may still carry a row (a cascaded constraint failure prints the row of another
 * table in its DETAIL). Pure.
 */
export function seesEverything(config: Config, roles: readonly string[], database: string): boolean {
  if (!checkAction(config, roles, 'SEE', database, { level: 'database' }).granted) return false;
  for (const r of roles) {
    for (const p of (Object.hasOwn(config.roles, r) ? config.roles[r]?.permissions : undefined) ?? []) {
      if (p.effect === 'deny' && p.actions.includes('SEE') && (p.database === '*' || p.database === database))
        return false;
    }
  }
  return true;
}

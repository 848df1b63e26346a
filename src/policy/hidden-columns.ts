// Which columns are hidden from a set of roles: no SEE, or generated from a column without SEE.
import type { Catalog } from '../catalog/types.js';
import { catalogKey } from '../catalog/types.js';
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

  private visit(schema: string, table: string, column: string, seen: Set<string>): ColumnVisibility {
    const key = `${schema}\0${table}\0${column}`;
    const hit = this.memo.get(key);
    if (hit) return hit;
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
      const col = this.catalog.relations
        .get(catalogKey(schema, table))
        ?.columns.find((c) => c.name === column);
      for (const from of col?.generatedFrom ?? []) {
        if (this.visit(schema, table, from, seen).hidden) {
          out = { hidden: true, see, generatedFrom: from };
          break;
        }
      }
    }
    this.memo.set(key, out);
    return out;
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

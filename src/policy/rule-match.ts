// Rule matching: which permission rules of which roles cover an (action, object) pair, deny first then allow.
import type { Config } from './config-schema.js';
import type { RuleRef } from './decision-types.js';
import type { DataAction, Permission } from './policy-schema.js';

/**
 * An object a rule can be checked against (seed 004, "Permission levels"): the database itself, a
 * table (relation) of it, or one column. Names are exact (already folded), as the Analysis gives them.
 */
export type PolicyObject =
  | { readonly level: 'database' }
  | { readonly level: 'table'; readonly schema: string; readonly table: string }
  | { readonly level: 'column'; readonly schema: string; readonly table: string; readonly column: string };

/** The outcome of checking one action on one object: granted or not, and the rule that decided. */
export interface RuleVerdict {
  readonly granted: boolean;
  /** The deny that refused, or the allow that granted; absent for default deny. */
  readonly rule?: RuleRef;
}

/** `*` matches any name at its level (seed 004, "Scope"); otherwise names compare exactly. */
function part(rule: string | undefined, name: string): boolean {
  return rule === undefined || rule === '*' || rule === name;
}

/**
 * The scope of a rule as written, e.g. `demo.public.users.email`, `demo`, `*`.
 * Input: one permission rule. Output: its parts joined with dots.
 */
export function ruleScope(p: Permission): string {
  return [p.database, p.schema, p.table, p.column].filter((x) => x !== undefined).join('.');
}

/**
 * True when rule `p` (of effect `p.effect`) covers `object` in `database` for `action`.
 * Source: DESIGN.md "Decision" step 1 — a rule matches when its scope (database ⊃ schema ⊃ table ⊃
 * column, `*` allowed) contains the object and it names the action. Refinements, each with its source:
 * - the database itself (MANAGE) is covered only by a rule with no schema (seed 004: MANAGE "is
 *   granted on a connection, not on a schema or a table, so a rule scoped below the connection never
 *   matches");
 * - a table is covered by rules at the table level or above; an allow scoped to columns of the table
 *   also covers the table for SELECT, INSERT and UPDATE (as PostgreSQL's column privileges let a role
 *   name a table it may read some columns of), but a column-scoped deny never denies the whole table
 *   unless its column is `*` (seed 004: "broad access with targeted restrictions" — a deny on one
 *   column must leave the rest of the table usable);
 * - a column is covered by rules at any level containing it.
 */
export function ruleMatches(
  p: Permission,
  action: DataAction,
  database: string,
  object: PolicyObject,
): boolean {
  if (!p.actions.includes(action)) return false;
  if (p.database === undefined || !part(p.database, database)) return false;
  if (object.level === 'database') return p.schema === undefined;
  if (!part(p.schema, object.schema) || !part(p.table, object.table)) return false;
  if (object.level === 'column') return part(p.column, object.column);
  if (p.column === undefined || p.column === '*') return true;
  return p.effect === 'allow' && (action === 'SELECT' || action === 'INSERT' || action === 'UPDATE');
}

/**
 * Checks `action` on `object` for the union of `roles` (seed 004, "Allow and deny", evaluation
 * order 1–5): every deny of every role first — any match refuses, whatever allows exist; then the
 * allows — the first match grants; else refused (default deny). Roles absent from the config are
 * ignored (they carry no rule). Output: the verdict and the deciding rule. Pure; never throws.
 */
export function checkAction(
  config: Config,
  roles: readonly string[],
  action: DataAction,
  database: string,
  object: PolicyObject,
): RuleVerdict {
  for (const effect of ['deny', 'allow'] as const) {
    for (const role of roles) {
      const r = Object.hasOwn(config.roles, role) ? config.roles[role] : undefined;
      if (!r) continue;
      for (let index = 0; index < r.permissions.length; index++) {
        const p = r.permissions[index]!;
        if (p.effect !== effect || !ruleMatches(p, action, database, object)) continue;
        return { granted: effect === 'allow', rule: { role, index, effect, scope: ruleScope(p) } };
      }
    }
  }
  return { granted: false };
}

/** `roles.<role>.permissions[<index>]`, the config path of a rule (for DETAIL and the audit). */
export function rulePath(rule: RuleRef): string {
  return `roles.${rule.role}.permissions[${rule.index}]`;
}

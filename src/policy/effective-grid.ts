// The permission grid's cells (seed 004): which action a role set holds on a scope, and the rule that decides it.
import type { Config } from './config-schema.js';
import type { RuleRef } from './decision-types.js';
import {
  APP_ACTIONS,
  type AppAction,
  DATA_ACTIONS,
  type DataAction,
  type Permission,
} from './policy-schema.js';
import { checkAction, type PolicyObject, ruleScope } from './rule-match.js';

/**
 * A row of the grid: a database (or `*`, every database), a schema of it, a table, a column. Each
 * level may be `*` (seed 004, "Scope": a rule with `*` matches any name at that level). A lower level
 * needs every level above it, as a permission rule does.
 */
export interface GridScope {
  readonly database: string;
  readonly schema?: string;
  readonly table?: string;
  readonly column?: string;
}

/** One cell's effective result: granted or not, and the rule that decides it (absent: default deny). */
export interface CellVerdict {
  readonly granted: boolean;
  readonly rule?: RuleRef;
}

/**
 * The policy object a grid row stands for, as the decision sees one (rule-match.ts): a column row is
 * that column; a table row that table; a schema row a table named `*` of it and a database row a table
 * `*` of schema `*` — what holds for an object of that scope that no narrower rule names. MANAGE is
 * checked on the database itself and is null below it (seed 004: MANAGE "is granted on a connection,
 * not on a schema or a table, so a rule scoped below the connection never matches").
 */
export function gridObject(scope: GridScope, action: DataAction): PolicyObject | null {
  if (action === 'MANAGE') return scope.schema === undefined ? { level: 'database' } : null;
  if (scope.column !== undefined && scope.table !== undefined && scope.schema !== undefined)
    return { level: 'column', schema: scope.schema, table: scope.table, column: scope.column };
  return { level: 'table', schema: scope.schema ?? '*', table: scope.table ?? '*' };
}

/**
 * The effective result of `action` on `scope` for someone holding exactly `roles` under `config`
 * (seed 004, "Allow and deny": denies of every role first, then allows, else default deny), with the
 * deciding rule. Null for MANAGE below a database (the grid offers no cell there). Pure.
 */
export function effectiveCell(
  config: Config,
  roles: readonly string[],
  action: DataAction,
  scope: GridScope,
): CellVerdict | null {
  const object = gridObject(scope, action);
  if (object === null) return null;
  return checkAction(config, roles, action, scope.database, object);
}

/**
 * Whether `roles` hold app-level `action` (seed 004's app-level rows: a rule naming the action with no
 * database; deny wins, default deny), with the deciding rule. A workspace admin's standing is not a
 * rule and is not counted here. Pure.
 */
export function effectiveAppAction(config: Config, roles: readonly string[], action: AppAction): CellVerdict {
  for (const effect of ['deny', 'allow'] as const)
    for (const role of roles) {
      const r = Object.hasOwn(config.roles, role) ? config.roles[role] : undefined;
      const rules = r?.permissions ?? [];
      for (let index = 0; index < rules.length; index++) {
        const p = rules[index] as Permission;
        if (p.effect !== effect || p.database !== undefined || !p.actions.includes(action)) continue;
        return { granted: effect === 'allow', rule: { role, index, effect, scope: ruleScope(p) || '*' } };
      }
    }
  return { granted: false };
}

/** Every cell of a grid: the app-level rows, then one row per scope with a verdict per action (null: no cell). */
export interface GridVerdicts {
  readonly app: Readonly<Record<AppAction, CellVerdict>>;
  readonly rows: readonly {
    readonly scope: GridScope;
    readonly cells: Readonly<Record<DataAction, CellVerdict | null>>;
  }[];
}

/** {@link effectiveAppAction} and {@link effectiveCell} over every app-level action and every action of `scopes`. */
export function gridVerdicts(
  config: Config,
  roles: readonly string[],
  scopes: readonly GridScope[],
): GridVerdicts {
  const app = Object.fromEntries(APP_ACTIONS.map((a) => [a, effectiveAppAction(config, roles, a)])) as Record<
    AppAction,
    CellVerdict
  >;
  const rows = scopes.map((scope) => ({
    scope,
    cells: Object.fromEntries(DATA_ACTIONS.map((a) => [a, effectiveCell(config, roles, a, scope)])) as Record<
      DataAction,
      CellVerdict | null
    >,
  }));
  return { app, rows };
}

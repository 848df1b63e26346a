// The wording of policy refusals: MESSAGE, DETAIL and HINT in DESIGN.md's style, POSITION from analysis offsets.
import type { AnalysisRefusal } from '../sql/analysis-types.js';
import type { Config } from './config-schema.js';
import type { Refusal, RuleRef } from './decision-types.js';
import type { PolicyObject } from './rule-match.js';
import { rulePath } from './rule-match.js';

/**
 * A table or column named as a person reads it in a message: `users.email`, or
 * `sales.orders.note` outside `public` (DESIGN.md's example "column users.email is hidden …").
 */
export function shortName(schema: string, table: string, column?: string): string {
  const t = schema === 'public' ? table : `${schema}.${table}`;
  return column === undefined ? t : `${t}.${column}`;
}

/** The full scope of an object as rules write it: `demo`, `demo.public.users`, `demo.public.users.email`. */
export function fullName(database: string, object: PolicyObject): string {
  if (object.level === 'database') return database;
  if (object.level === 'table') return `${database}.${object.schema}.${object.table}`;
  return `${database}.${object.schema}.${object.table}.${object.column}`;
}

/** `Your role: analyst.` or `Your roles: analyst, support.` */
export function rolesSentence(roles: readonly string[]): string {
  return roles.length === 1 ? `Your role: ${roles[0]}.` : `Your roles: ${roles.join(', ')}.`;
}

/** A rule as written: `roles.analyst.permissions[1] (deny SEE on demo.public.users.email)`. */
export function describeRule(config: Config, rule: RuleRef): string {
  const p = config.roles[rule.role]?.permissions[rule.index];
  const actions = p ? p.actions.join(', ') : '';
  return `${rulePath(rule)} (${rule.effect} ${actions} on ${rule.scope})`;
}

/**
 * DETAIL for a check that failed: the caller's roles and the deny that refused, or the absence of
 * any allow (default deny). Source: DESIGN.md "Decision" — "DETAIL names the caller's role and rule".
 */
export function deniedDetail(
  config: Config,
  roles: readonly string[],
  action: string,
  objectName: string,
  rule: RuleRef | undefined,
): string {
  if (rule && rule.effect === 'deny') {
    return `${rolesSentence(roles)} Rule ${describeRule(config, rule)} denies ${action} on ${objectName}; a deny always wins.`;
  }
  return `${rolesSentence(roles)} No rule of ${roles.length === 1 ? 'it' : 'them'} allows ${action} on ${objectName}, and nothing is allowed by default.`;
}

/** 1-based POSITION from a 0-based character offset (ErrorResponse's field is 1-based). */
export function position(location: number | undefined): number | undefined {
  return location === undefined || location < 0 ? undefined : location + 1;
}

/** A refusal the analysis made, as the client will see it (its code and text, the offset made 1-based). */
export function fromAnalysisRefusal(r: AnalysisRefusal): Refusal {
  return {
    sqlstate: r.sqlstate,
    message: r.message,
    ...(r.detail !== undefined ? { detail: r.detail } : {}),
    ...(r.hint !== undefined ? { hint: r.hint } : {}),
    ...(r.location !== undefined ? { position: r.location + 1 } : {}),
  };
}

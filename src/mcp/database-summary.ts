// list_databases: the databases a key's roles reach, each with a one-line summary of what they allow there.
import type { Config } from '../policy/config-schema.js';
import { checkDatabaseAccess } from '../policy/database-access.js';
import type { Permission } from '../policy/policy-schema.js';
import { ruleScope } from '../policy/rule-match.js';

/** One rule of the key's roles that applies to a database, as list_databases shows it. */
export interface RuleSummary {
  readonly role: string;
  readonly effect: 'allow' | 'deny';
  readonly actions: readonly string[];
  /** The rule's scope as written, e.g. `demo`, `*`, `demo.public.users.email`. */
  readonly scope: string;
}

/** One database the key reaches. */
export interface DatabaseSummary {
  readonly name: string;
  /** One line: the allows, then the denies that narrow them. */
  readonly summary: string;
  readonly rules: readonly RuleSummary[];
}

function appliesTo(p: Permission, database: string): boolean {
  return p.database === '*' || p.database === database;
}

/**
 * The databases of `config` that a caller holding `roles` reaches over an MCP connection: the
 * connect check passes (`checkDatabaseAccess` with kind `mcp`: a database no role of the workspace
 * mentions is refused, seed 004) and at least one allow rule of the roles applies to it (scoped to it
 * or to `*`). Each comes with the rules that apply and a one-line summary, e.g.
 * `allow SELECT, SEE on demo; deny SEE on demo.public.users.email`. Sorted by name. Pure.
 */
export function summarizeDatabases(config: Config, roles: readonly string[]): DatabaseSummary[] {
  const out: DatabaseSummary[] = [];
  for (const name of Object.keys(config.databases).sort()) {
    if (!checkDatabaseAccess(config, roles, name, 'mcp').ok) continue;
    const rules: RuleSummary[] = [];
    for (const role of roles) {
      const r = Object.hasOwn(config.roles, role) ? config.roles[role] : undefined;
      for (const p of r?.permissions ?? []) {
        if (!appliesTo(p, name)) continue;
        rules.push({ role, effect: p.effect, actions: [...p.actions], scope: ruleScope(p) });
      }
    }
    if (!rules.some((r) => r.effect === 'allow')) continue;
    const line = (effect: 'allow' | 'deny') =>
      rules.filter((r) => r.effect === effect).map((r) => `${effect} ${r.actions.join(', ')} on ${r.scope}`);
    out.push({ name, summary: [...line('allow'), ...line('deny')].join('; '), rules });
  }
  return out;
}

// pgwarden's rule beyond the seed: an editor can never grant more than it holds itself.
import type { Config } from './config-schema.js';
import { holdsAppAction } from './connection-roles.js';
import { rolesGrantOn } from './database-access.js';
import { APP_ACTIONS, type AppAction, type Permission } from './policy-schema.js';
import { findPrincipal } from './principals.js';
import { resolveRoles } from './resolve-roles.js';
import { ruleScope } from './rule-match.js';

/** Who edits the policy: the roles it holds now, and whether it is a workspace admin. */
export interface Editor {
  readonly name: string;
  readonly roles: readonly string[];
  readonly workspaceAdmin: boolean;
}

type Scope = readonly (string | undefined)[];

const scopeOf = (p: Permission): Scope => [p.database, p.schema, p.table, p.column];

/** True when scope `outer` contains every object of `inner` (`*` and an absent level contain anything). */
function covers(outer: Scope, inner: Scope): boolean {
  return outer.every((o, i) => o === undefined || o === '*' || o === inner[i]);
}

/** True when some object lies in both scopes (a level where both name different plain names separates them). */
function overlaps(a: Scope, b: Scope): boolean {
  return a.every((x, i) => {
    const y = b[i];
    return x === undefined || y === undefined || x === '*' || y === '*' || x === y;
  });
}

/**
 * Whether `editor` holds app-level `action`: a workspace admin holds every app-level action (issue 19),
 * anyone else as the seed says (deny wins, default deny; connection-roles.ts `holdsAppAction`).
 */
export function editorHolds(config: Config, editor: Editor, action: AppAction): boolean {
  return editor.workspaceAdmin || holdsAppAction(config, editor.roles, action);
}

/**
 * The databases of `config` whose catalog `editor` may read through the admin API (the grid's tree,
 * "try a statement"): every one for a workspace admin (it may name any role, seed 000), otherwise
 * those where an allow rule of its roles grants something (database-access.ts `rolesGrantOn`), as a
 * connection through the proxy would be opened (issue 16 item 7: a caller granted nothing on a
 * database does not read its table names). Output: `config.databases` without the others.
 */
export function editorDatabases(config: Config, editor: Editor): Config['databases'] {
  return Object.fromEntries(
    Object.entries(config.databases).filter(
      ([db]) => editor.workspaceAdmin || rolesGrantOn(config, editor.roles, db),
    ),
  );
}

/**
 * The allow rules of `granted` that go beyond what `editor` holds, each as a message (empty when
 * none). pgwarden's rule, beyond seed 004: a role can never grant more than its editor holds — an
 * editor without MANAGE on a database cannot grant MANAGE there. A data action is held over a rule's
 * whole scope when an allow of the editor's roles covers that scope and no deny of theirs for the
 * action overlaps it (a deny SEE on one column means the editor cannot grant SEE on its table). An
 * app-level action is held as {@link editorHolds} says. A workspace admin also holds what any one
 * role holds (it may name any, seed 000). Deny rules narrow and are never limited.
 */
export function grantsBeyondEditor(config: Config, editor: Editor, granted: readonly Permission[]): string[] {
  // The rule sets the editor can act under: its own roles together (deny wins across them), and —
  // a workspace admin may use any role alone by naming it (seed 000) — each role by itself.
  const sets = [rulesOfRoles(config, editor.roles)];
  if (editor.workspaceAdmin) for (const r of Object.keys(config.roles)) sets.push(rulesOfRoles(config, [r]));
  const holds = (mine: readonly Permission[], action: string, scope: Scope) =>
    mine.some(
      (p) =>
        p.effect === 'allow' &&
        p.actions.includes(action as Permission['actions'][number]) &&
        covers(scopeOf(p), scope),
    ) &&
    !mine.some(
      (p) =>
        p.effect === 'deny' &&
        p.actions.includes(action as Permission['actions'][number]) &&
        overlaps(scopeOf(p), scope),
    );
  const out: string[] = [];
  for (const rule of granted) {
    if (rule.effect !== 'allow') continue;
    for (const action of rule.actions) {
      if ((APP_ACTIONS as readonly string[]).includes(action)) {
        if (!editorHolds(config, editor, action as AppAction))
          out.push(`cannot grant ${action}: ${editor.name} does not hold it`);
        continue;
      }
      if (!sets.some((mine) => holds(mine, action, scopeOf(rule))))
        out.push(`cannot grant ${action} on ${ruleScope(rule)}: ${editor.name} does not hold it there`);
    }
  }
  return out;
}

/** The allow rules of the roles `names` (what holding them grants). */
export function rulesOfRoles(config: Config, names: readonly string[]): Permission[] {
  return names.flatMap((r) => (Object.hasOwn(config.roles, r) ? (config.roles[r]?.permissions ?? []) : []));
}

/**
 * What an edit grants, as allow rules: every allow some principal holds under `after` and did not
 * under `before` (a new rule in a role, a new tenant, a group member, a key's roles, a default role),
 * and every deny some principal held under `before` and no longer holds under `after` (lifting a
 * deny grants what it denied). A principal holds the rules of the roles it resolves to when naming no
 * role (resolve-roles.ts). Output: each rule once (compared by value), effect `allow`.
 */
export function newlyHeldRules(before: Config, after: Config, now: number): Permission[] {
  const rules = (config: Config, name: string): Permission[] => {
    const p = findPrincipal(config, name, now);
    if (!p) return [];
    const r = resolveRoles(config, p, {});
    return r.ok ? rulesOfRoles(config, r.roles) : [];
  };
  const held = (config: Config, name: string): Permission[] => {
    const mine = rules(config, name);
    const other = rules(config === before ? after : before, name);
    const allows = mine.filter((x) => x.effect === 'allow');
    if (config === before) return allows;
    // The denies of `before` lifted in `after`, as the allows they amount to.
    const now = new Set(mine.filter((x) => x.effect === 'deny').map((x) => JSON.stringify(x)));
    const lifted = other
      .filter((x) => x.effect === 'deny' && !now.has(JSON.stringify(x)))
      .map((x) => ({ ...x, effect: 'allow' as const }));
    return [...allows, ...lifted];
  };
  const names = new Set([...Object.keys(after.users), ...after.api_keys.map((k) => k.id)]);
  const out = new Map<string, Permission>();
  for (const name of names) {
    const old = new Set(held(before, name).map((x) => JSON.stringify(x)));
    for (const x of held(after, name)) {
      const key = JSON.stringify(x);
      if (!old.has(key)) out.set(key, x);
    }
  }
  return [...out.values()];
}

// The decision for an Analysis and a set of roles: requirements deny-first then allow, SEE per column use, masks.
import type { Analysis, Requirement, StatementAnalysis } from '../sql/analysis-types.js';
import { checkUses, type Pending } from './column-use-checks.js';
import { databaseIsRuled } from './database-access.js';
import type { DecideContext } from './decide-context.js';
import type { Decision, RequirementVerdict, StatementDecision } from './decision-types.js';
import { HiddenColumns, seesEverything } from './hidden-columns.js';
import { deniedDetail, fromAnalysisRefusal, fullName, position, shortName } from './refusal-messages.js';
import { checkAction, type PolicyObject } from './rule-match.js';

/**
 * Decides an analyzed SQL string for a caller holding `roles` (DESIGN.md "Decision").
 * Inputs: the Analysis, the roles resolved at connect, and the context. Output: one
 * StatementDecision per analyzed statement, in order, and `refusal` — the first refused statement's
 * refusal, else the analysis's own (a parse error has no statements). Per statement:
 * 1. an analysis refusal passes through as the refusal (its SQLSTATE: 42601, 42P01, 42703, 0A000, …);
 * 2. a database no role mentions: every statement allowed unmasked on a `local` connection, refused
 *    42501 on `proxified` and `mcp` ones (seed 004's table; normally refused at connect already);
 * 3. every requirement (DESIGN.md "Requirements"): any matching deny across all roles → 42501;
 *    else any matching allow → granted; else 42501 (default deny) — seed 004 "Allow and deny"
 *    evaluation order 1–5; a column-level `deny SELECT` refuses any statement referencing the column;
 *    MANAGE is checked on the database;
 * 4. every column use of a column hidden from the roles (no SEE, or generated from one without SEE):
 *    `output k` → mask result column k; `write-target` → allowed, except into a column under a
 *    UNIQUE/PRIMARY KEY/EXCLUSION constraint (DESIGN.md "Writes as reads": 42501); `test` and
 *    `compute` → 42501 naming the column and the clause; `whole-row` of a table with any hidden
 *    column → 42501 (seed 004 "Hiding a column"). Untraceable result columns are fine when nothing
 *    hidden flows into them: any hidden column flowing into one is a `compute` use, refused.
 * 5. PREPARE and DECLARE CURSOR also decide the statement they hold (`prepared`); its refusal refuses them.
 * Session control has no requirements and is allowed. `redactErrors` is set when the statement touches
 * a table with a hidden column. Uncached and pure: use {@link DecisionCache} in the proxy. Never throws.
 */
export function decide(analysis: Analysis, roles: readonly string[], ctx: DecideContext): Decision {
  const hidden = new HiddenColumns(ctx.config, roles, ctx.database, ctx.catalog);
  const ruled = databaseIsRuled(ctx.config, ctx.database);
  const statements = analysis.statements.map((s) => decideStatement(s, roles, ctx, hidden, ruled));
  const first = statements.find((s) => s.verdict === 'refuse');
  const refusal =
    first?.verdict === 'refuse'
      ? first.refusal
      : analysis.refusal
        ? fromAnalysisRefusal(analysis.refusal)
        : undefined;
  if (refusal) return { statements, refusal };
  // Mask at read (DESIGN.md "Three walls", wall 2): for a caller who does not see everything, the
  // text sent upstream is rewritten with these hidden columns masked at their source.
  const rewrite = ruled && ctx.rewrite !== false && !seesEverything(ctx.config, roles, ctx.database);
  return rewrite ? { statements, hiddenOf: (rel) => hidden.relation(rel) } : { statements };
}

function decideStatement(
  s: StatementAnalysis,
  roles: readonly string[],
  ctx: DecideContext,
  hidden: HiddenColumns,
  ruled: boolean,
): StatementDecision {
  if (s.refusal) return { verdict: 'refuse', refusal: fromAnalysisRefusal(s.refusal), checks: [] };
  if (!ruled) {
    if (ctx.connection === 'local') return { verdict: 'allow', mask: [], redactErrors: false, checks: [] };
    return {
      verdict: 'refuse',
      refusal: {
        sqlstate: '42501',
        message: `permission denied for database "${ctx.database}"`,
        detail: `No role of the workspace has a rule for database ${ctx.database}; a ${ctx.connection} connection gets nothing a role did not grant.`,
      },
      checks: [],
    };
  }

  const checks: RequirementVerdict[] = [];
  const pending: Pending[] = [];
  checkRequirements(s.requirements, roles, ctx, checks, pending);
  const mask = new Set<number>();
  if (ctx.seeChecks !== false) checkUses(s, roles, ctx, hidden, checks, pending, mask);

  let prepared: StatementDecision | undefined;
  for (const effect of s.sessionEffects) {
    if (effect.kind !== 'prepare' && effect.kind !== 'declare-cursor') continue;
    prepared = decideStatement(effect.inner, roles, ctx, hidden, ruled);
    if (prepared.verdict === 'refuse') pending.push({ at: -1, refusal: prepared.refusal });
  }

  if (pending.length > 0) {
    // Requirement refusals come first (in requirement order), then SEE refusals by offset.
    const refusal = pending.reduce((a, b) => (b.at < a.at ? b : a)).refusal;
    return { verdict: 'refuse', refusal, checks };
  }
  return {
    verdict: 'allow',
    mask: [...mask].sort((a, b) => a - b),
    redactErrors: touchesHiddenTable(s, hidden),
    checks,
    ...(prepared ? { prepared } : {}),
  };
}

function objectKind(o: PolicyObject, database: string): string {
  if (o.level === 'database') return `database ${database}`;
  if (o.level === 'table') return `table ${shortName(o.schema, o.table)}`;
  return `column ${shortName(o.schema, o.table, o.column)}`;
}

/** Step 1 of DESIGN.md "Decision", for each distinct (action, object) pair, in analysis order. */
function checkRequirements(
  requirements: readonly Requirement[],
  roles: readonly string[],
  ctx: DecideContext,
  checks: RequirementVerdict[],
  pending: Pending[],
): void {
  const seen = new Set<string>();
  for (const req of requirements) {
    const object: PolicyObject = req.object;
    const name = fullName(ctx.database, object);
    const key = `${req.action}\0${name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const v = checkAction(ctx.config, roles, req.action, ctx.database, object);
    checks.push({
      action: req.action,
      object: name,
      granted: v.granted,
      ...(v.rule ? { rule: v.rule } : {}),
    });
    if (v.granted) continue;
    const why =
      v.rule?.effect === 'deny'
        ? `${req.action} is denied to you`
        : `no rule of your roles allows ${req.action} on it`;
    const message =
      object.level === 'database'
        ? `permission denied for database ${ctx.database}: ${req.reason} needs MANAGE, and ${v.rule ? 'it is denied to you' : 'no rule of your roles allows it'}`
        : `permission denied for ${objectKind(object, ctx.database)}: ${why}`;
    const pos = position(req.location);
    pending.push({
      // Requirement refusals sort before every SEE refusal, in requirement order.
      at: -1_000_000_000 + pending.length,
      refusal: {
        sqlstate: '42501',
        message,
        detail: deniedDetail(ctx.config, roles, req.action, name, v.rule),
        ...(pos !== undefined ? { position: pos } : {}),
        ...(v.rule ? { rule: v.rule } : {}),
        ...(object.level === 'column' ? { column: `${object.schema}.${object.table}.${object.column}` } : {}),
      },
    });
  }
}

/** True when the statement names or uses a table that has a column hidden from the roles (DESIGN.md "Error redaction"). */
function touchesHiddenTable(s: StatementAnalysis, hidden: HiddenColumns): boolean {
  const tables = new Set<string>();
  const add = (schema: string, table: string) => tables.add(`${schema}\0${table}`);
  for (const r of s.requirements) if (r.object.level !== 'database') add(r.object.schema, r.object.table);
  for (const u of s.uses) add(u.schema, u.table);
  for (const rc of s.resultColumns) for (const src of rc.sources ?? []) add(src.schema, src.table);
  for (const t of tables) {
    const [schema, table] = t.split('\0') as [string, string];
    if (hidden.hiddenOf(schema, table).length > 0) return true;
  }
  return false;
}

// What `pgwarden check` prints: per statement the verdict, result columns with lineage and masks, requirements with rules.
import type { Analysis, ResultColumn, StatementAnalysis } from '../sql/analysis-types.js';
import { alignedTable, paint } from './aligned-table.js';
import type { Config } from './config-schema.js';
import type { ConnectionKind, Decision, Refusal, RuleRef, StatementDecision } from './decision-types.js';
import { describeRule } from './refusal-messages.js';
import { rulePath } from './rule-match.js';

/** Everything one `pgwarden check` run found, for {@link renderCheckText} and {@link checkJson}. */
export interface CheckReport {
  readonly config: Config;
  readonly user: string;
  /** The roles resolved at connect; empty when the connection itself was refused. */
  readonly roles: readonly string[];
  readonly database: string;
  readonly connection: ConnectionKind;
  readonly sql: string;
  /** The upstream whose catalog was read, `host:port/database`; absent when none was read. */
  readonly upstream?: string;
  /** A refusal at connect (role resolution 28000, unruled database 42501): no statement is analyzed. */
  readonly connectRefusal?: Refusal;
  readonly analysis?: Analysis;
  readonly decision?: Decision;
}

/** The verdict words of the report: `allowed`, `allowed with masks`, `refused`. */
export type CheckVerdict = 'allowed' | 'allowed with masks' | 'refused';

function statementVerdict(d: StatementDecision): CheckVerdict {
  if (d.verdict === 'refuse') return 'refused';
  return d.mask.length > 0 ? 'allowed with masks' : 'allowed';
}

/** The verdict of the whole string: refused when anything is (issue 4: exit 1), else allowed (with masks). */
export function overallVerdict(r: CheckReport): CheckVerdict {
  if (r.connectRefusal || r.decision?.refusal || !r.decision) return 'refused';
  return r.decision.statements.some((s) => s.verdict === 'allow' && s.mask.length > 0)
    ? 'allowed with masks'
    : 'allowed';
}

/** Exit code of `pgwarden check` (issue 4): 0 when allowed, 1 when refused. */
export function checkExitCode(r: CheckReport): 0 | 1 {
  return overallVerdict(r) === 'refused' ? 1 : 0;
}

/** The text of statement `s` within `sql` (offsets are characters), whitespace collapsed. */
function statementText(sql: string, s: StatementAnalysis): string {
  const chars = [...sql];
  const text = chars.slice(s.location, s.length > 0 ? s.location + s.length : undefined).join('');
  return text.replace(/\s+/g, ' ').trim();
}

function lineage(c: ResultColumn): string {
  if (c.sources === null) return '(expression)';
  return c.sources.map((s) => `${s.schema}.${s.table}.${s.column}`).join(' | ');
}

function ruleText(config: Config, rule: RuleRef | undefined): string {
  return rule ? describeRule(config, rule) : 'no rule (default deny)';
}

/** The line of source and a caret under 1-based character `position`, as psql shows a POSITION. */
function caret(sql: string, position: number): string[] {
  const chars = [...sql];
  let start = position - 1;
  while (start > 0 && chars[start - 1] !== '\n') start--;
  let end = position - 1;
  while (end < chars.length && chars[end] !== '\n') end++;
  const line = chars.slice(start, end).join('');
  return [line, `${' '.repeat(position - 1 - start)}^`];
}

function refusalLines(sql: string, f: Refusal, colour: boolean, indent: string): string[] {
  const out = [`${indent}${paint('REFUSED', 'red', colour)}  ${f.sqlstate}  ${f.message}`];
  if (f.position !== undefined) {
    const [line, mark] = caret(sql, f.position);
    out.push(`${indent}  LINE:   ${line}`, `${indent}          ${paint(mark ?? '', 'red', colour)}`);
  }
  if (f.detail) out.push(`${indent}  DETAIL: ${f.detail}`);
  if (f.hint) out.push(`${indent}  HINT:   ${f.hint}`);
  return out;
}

function verdictWord(v: CheckVerdict, colour: boolean): string {
  if (v === 'refused') return paint('REFUSED', 'red', colour);
  if (v === 'allowed with masks') return paint('ALLOWED WITH MASKS', 'yellow', colour);
  return paint('ALLOWED', 'green', colour);
}

function statementBlock(
  r: CheckReport,
  i: number,
  s: StatementAnalysis,
  d: StatementDecision,
  colour: boolean,
): string {
  const lines: string[] = [];
  lines.push(paint(`Statement ${i + 1}: ${statementText(r.sql, s)}`, 'bold', colour));
  const v = statementVerdict(d);
  if (d.verdict === 'refuse') lines.push(...refusalLines(r.sql, d.refusal, colour, '  '));
  else {
    const masked = d.mask
      .map((k) => {
        const name = s.resultColumns[k]?.name;
        return name ? `${name} (column ${k + 1})` : `column ${k + 1}`;
      })
      .join(', ');
    lines.push(`  ${verdictWord(v, colour)}${d.mask.length > 0 ? ` (${masked} masked)` : ''}`);
    if (d.prepared) {
      const p = d.prepared;
      lines.push(
        `  the statement it prepares: ${p.verdict === 'refuse' ? 'refused' : p.mask.length > 0 ? `rows come back with ${p.mask.map((k) => `column ${k + 1}`).join(', ')} masked` : 'allowed'}`,
      );
    }
  }
  let out = `${lines.join('\n')}\n`;
  if (s.resultColumns.length > 0) {
    const mask = new Set(d.verdict === 'allow' ? d.mask : []);
    const rows = [['#', 'column', 'lineage', 'shown']];
    s.resultColumns.forEach((c, k) => {
      const shown =
        d.verdict === 'refuse'
          ? '-'
          : mask.has(k)
            ? paint('masked', 'yellow', colour)
            : paint('yes', 'green', colour);
      rows.push([String(k + 1), c.name, lineage(c), shown]);
    });
    out += `\n${alignedTable(rows, '  ')}`;
  }
  if (d.checks.length > 0) {
    const rows = [['requirement', 'object', 'verdict', 'rule']];
    for (const c of d.checks) {
      const granted =
        c.action === 'SEE' ? (c.granted ? 'seen' : 'hidden') : c.granted ? 'granted' : 'refused';
      const colourOf = c.granted ? 'green' : c.action === 'SEE' ? 'yellow' : 'red';
      rows.push([
        c.action,
        c.object,
        paint(granted, colourOf, colour),
        paint(c.carries ? `carries ${c.carries}` : ruleText(r.config, c.rule), 'dim', colour),
      ]);
    }
    out += `\n${alignedTable(rows, '  ')}`;
  }
  return out;
}

/**
 * Renders a report for a person: a header (user, roles, database, connection; the upstream
 * `host:port/database` whose catalog was read), then per statement
 * its verdict (ALLOWED / ALLOWED WITH MASKS / REFUSED with SQLSTATE, message, the offending line
 * with a caret, DETAIL and HINT), a table of result columns (lineage, shown or masked) and a table
 * of requirements and SEE checks with the rule that granted or refused each. Colour (ANSI) only when
 * `colour` is true — the CLI passes true on a terminal without NO_COLOR. Source: issue 4, "pgwarden check".
 */
export function renderCheckText(r: CheckReport, colour: boolean): string {
  const head =
    `user ${r.user} · ${r.roles.length === 1 ? 'role' : 'roles'} ${r.roles.join(', ') || '(none)'} · database ${r.database} · ${r.connection}\n` +
    (r.upstream ? `catalog read from ${r.upstream}\n` : '');
  if (r.connectRefusal)
    return `${head}\n${refusalLines(r.sql, r.connectRefusal, colour, '').join('\n')} (at connect)\n`;
  const parts = [head];
  const a = r.analysis;
  const d = r.decision;
  if (a && d) {
    a.statements.forEach((s, i) => {
      const sd = d.statements[i];
      if (sd) parts.push(statementBlock(r, i, s, sd, colour));
    });
    if (a.statements.length === 0 && d.refusal)
      parts.push(`${refusalLines(r.sql, d.refusal, colour, '').join('\n')}\n`);
  }
  parts.push(`${verdictWord(overallVerdict(r), colour)}\n`);
  return parts.join('\n');
}

function refusalJson(f: Refusal): Record<string, unknown> {
  return { ...f, ...(f.rule ? { rule: rulePath(f.rule) } : {}) };
}

/**
 * The report as a JSON value (`pgwarden check --json`): `verdict`, the connection facts (with
 * `upstream`, the `host:port/database` whose catalog was read), and per
 * statement `sql`, `verdict`, `refusal`, `mask` (0-based), `columns` (name, lineage or null,
 * masked) and `checks` (action, object, granted, rule path and text). Stable field names for scripts.
 */
export function checkJson(r: CheckReport): Record<string, unknown> {
  const statements = (r.analysis?.statements ?? []).map((s, i) => {
    const d = r.decision?.statements[i];
    const mask = new Set(d?.verdict === 'allow' ? d.mask : []);
    return {
      sql: statementText(r.sql, s),
      verdict: d ? statementVerdict(d) : 'refused',
      ...(d?.verdict === 'refuse' ? { refusal: refusalJson(d.refusal) } : {}),
      ...(d?.verdict === 'allow' ? { mask: d.mask, redactErrors: d.redactErrors } : {}),
      columns: s.resultColumns.map((c, k) => ({
        name: c.name,
        lineage: c.sources?.map((x) => `${x.schema}.${x.table}.${x.column}`) ?? null,
        masked: mask.has(k),
      })),
      checks: (d?.checks ?? []).map((c) => ({
        action: c.action,
        object: c.object,
        granted: c.granted,
        rule: c.rule ? rulePath(c.rule) : null,
        ruleText: ruleText(r.config, c.rule),
        ...(c.carries ? { carries: c.carries } : {}),
      })),
    };
  });
  const refusal = r.connectRefusal ?? r.decision?.refusal;
  return {
    verdict: overallVerdict(r),
    user: r.user,
    roles: r.roles,
    database: r.database,
    connection: r.connection,
    ...(r.upstream ? { upstream: r.upstream } : {}),
    ...(refusal ? { refusal: refusalJson(refusal) } : {}),
    ...(r.connectRefusal ? { refusedAtConnect: true } : {}),
    statements,
  };
}

// `pgwarden replay`: the statements of an audit log decided again under a proposed policy, and every verdict that would change.
import type { Catalog } from '../catalog/types.js';
import { analyze } from '../sql/analyze.js';
import type { Config } from './config-schema.js';
import { checkDatabaseAccess } from './database-access.js';
import { decide } from './decide.js';
import { findPrincipal } from './principals.js';
import { resolveRoles } from './resolve-roles.js';

/** A verdict as the audit records it: allowed, masked (with the masked result columns), or refused (with why). */
export interface Verdict {
  readonly decision: 'allowed' | 'masked' | 'refused';
  readonly masked?: readonly string[];
  readonly reason?: string;
}

/** How a verdict changes. */
export type ChangeKind =
  | 'allowed→refused'
  | 'refused→allowed'
  | 'masks-added'
  | 'masks-removed'
  | 'masks-changed';

/** One statement of one user whose verdict would change, with how often the log holds it. */
export interface ReplayChange {
  readonly identity: string;
  readonly database: string;
  readonly sql: string;
  readonly occurrences: number;
  readonly change: ChangeKind;
  readonly before: Verdict;
  readonly after: Verdict;
}

/** What replay found: how many distinct (user, database, statement) were decided again, the changes and their counts. */
export interface ReplayReport {
  /** Audit lines of statements read (admin lines and lines without a statement are not). */
  readonly lines: number;
  /** Distinct (identity, database, search path, statement) decided again. */
  readonly statements: number;
  /** Lines left out: `[unterminated]` texts, unknown databases, EXECUTE and FETCH (their PREPARE or DECLARE is replayed). */
  readonly skipped: number;
  readonly counts: Readonly<Record<ChangeKind, number>>;
  readonly changes: readonly ReplayChange[];
}

/** Options of {@link replayAudit}. */
export interface ReplayOptions {
  /** The proposed policy (a whole config: its databases and mode are used too). */
  readonly proposed: Config;
  /** The policy to compare with; absent: each line's recorded verdict is the baseline. */
  readonly current?: Config;
  /** The catalog of a database (by its name in the config); rejects when it cannot be read. */
  catalog(database: string): Promise<Catalog>;
}

/**
 * The verdict of `sql` for `identity` (a user or API key; a viewer's own name when the line has one)
 * under `config`: roles resolved as a connection naming no role, database access for the config's
 * mode, then analysis and decision (policy/decide.ts) under `searchPath`. Refusals at connect count
 * as refused.
 */
export function verdictUnder(
  config: Config,
  identity: string,
  database: string,
  sql: string,
  searchPath: readonly string[],
  catalog: Catalog,
): Verdict {
  const principal = findPrincipal(config, identity, Date.now());
  if (!principal) return { decision: 'refused', reason: `no user or active API key "${identity}"` };
  const roles = resolveRoles(config, principal, {});
  if (!roles.ok) return { decision: 'refused', reason: roles.message };
  const access = checkDatabaseAccess(config, roles.roles, database, config.mode);
  if (!access.ok) return { decision: 'refused', reason: access.message };
  const analysis = analyze(sql, { catalog, searchPath: [...searchPath] });
  const d = decide(analysis, roles.roles, { config, connection: config.mode, database, catalog });
  if (d.refusal) return { decision: 'refused', reason: d.refusal.message };
  const masked = analysis.statements.flatMap((s, i) => {
    const sd = d.statements[i];
    if (sd?.verdict !== 'allow') return [];
    // PREPARE and DECLARE: the masks of the statement they hold, which EXECUTE and FETCH return.
    const held = s.sessionEffects.find((e) => e.kind === 'prepare' || e.kind === 'declare-cursor');
    if (held && sd.prepared?.verdict === 'allow')
      return sd.prepared.mask.map((k) => held.inner.resultColumns[k]?.name ?? String(k));
    return sd.mask.map((k) => s.resultColumns[k]?.name ?? String(k));
  });
  return masked.length > 0 ? { decision: 'masked', masked } : { decision: 'allowed' };
}

/**
 * Whether `sql` runs what an earlier statement of its session prepared: `EXECUTE` of a `PREPARE`d
 * statement, `FETCH`/`MOVE` of a `DECLARE`d cursor. Its verdict is that statement's, which a line
 * alone does not carry (decided again alone, `EXECUTE p($1)` reads no column); the `PREPARE` or
 * `DECLARE` line is replayed instead, with the masks of the statement it holds.
 */
function runsSessionStatement(sql: string, catalog: Catalog, searchPath: readonly string[]): boolean {
  return effectKinds(sql, catalog, searchPath).some((k) => k === 'execute' || k === 'fetch');
}

/** Whether `sql` is a PREPARE or DECLARE CURSOR: it holds the statement a later EXECUTE or FETCH runs. */
function holdsStatement(sql: string, catalog: Catalog, searchPath: readonly string[]): boolean {
  return effectKinds(sql, catalog, searchPath).some((k) => k === 'prepare' || k === 'declare-cursor');
}

function effectKinds(sql: string, catalog: Catalog, searchPath: readonly string[]): string[] {
  const a = analyze(sql, { catalog, searchPath: [...searchPath] });
  return a.statements.flatMap((s) => s.sessionEffects.map((e) => e.kind));
}

/** How `before` → `after` changes, or undefined when it does not. */
export function changeOf(before: Verdict, after: Verdict): ChangeKind | undefined {
  const refusedBefore = before.decision === 'refused';
  const refusedAfter = after.decision === 'refused';
  if (refusedBefore !== refusedAfter) return refusedAfter ? 'allowed→refused' : 'refused→allowed';
  if (refusedBefore) return undefined;
  const a = new Set(before.masked ?? []);
  const b = new Set(after.masked ?? []);
  const added = [...b].some((x) => !a.has(x));
  const removed = [...a].some((x) => !b.has(x));
  if (added && removed) return 'masks-changed';
  if (added) return 'masks-added';
  if (removed) return 'masks-removed';
  return undefined;
}

/**
 * Replays audit lines (issue 19, "A dry run before a change lands"): every statement line (`sql`,
 * `identity`, `database`, `searchPath`, `decision`, `masked` as proxy/audit.ts writes them, literals
 * already numbered placeholders) is decided again under `proposed`, and compared with its decision
 * under `current` (or, without one, with the verdict the line records). Identical (identity,
 * database, search path, statement) are decided once and counted. Output: every change, per user
 * and statement, in log order of first occurrence, and counts per kind of change.
 */
export async function replayAudit(
  lines: readonly Record<string, unknown>[],
  opts: ReplayOptions,
): Promise<ReplayReport> {
  const counts: Record<ChangeKind, number> = {
    'allowed→refused': 0,
    'refused→allowed': 0,
    'masks-added': 0,
    'masks-removed': 0,
    'masks-changed': 0,
  };
  const groups = new Map<string, { line: Record<string, unknown>; occurrences: number }>();
  let read = 0;
  let skipped = 0;
  for (const l of lines) {
    if (l.admin === true || typeof l.sql !== 'string' || typeof l.database !== 'string') continue;
    read++;
    if (l.sql === '[unterminated]' || !Object.hasOwn(opts.proposed.databases, l.database)) {
      skipped++;
      continue;
    }
    const who = typeof l.viewer === 'string' ? l.viewer : String(l.identity);
    const key = JSON.stringify([who, l.database, l.searchPath ?? null, l.sql]);
    const g = groups.get(key);
    if (g) g.occurrences++;
    else groups.set(key, { line: { ...l, identity: who }, occurrences: 1 });
  }
  const changes: ReplayChange[] = [];
  for (const { line, occurrences } of groups.values()) {
    const database = line.database as string;
    const catalog = await opts.catalog(database);
    const searchPath = Array.isArray(line.searchPath)
      ? (line.searchPath as string[])
      : catalog.defaultSearchPath;
    const sql = line.sql as string;
    const identity = line.identity as string;
    if (runsSessionStatement(sql, catalog, searchPath)) {
      skipped += occurrences;
      continue;
    }
    const recorded: Verdict = {
      decision: line.decision as Verdict['decision'],
      ...(Array.isArray(line.masked) ? { masked: line.masked as string[] } : {}),
      ...(typeof line.reason === 'string' ? { reason: line.reason } : {}),
    };
    const before = opts.current
      ? verdictUnder(opts.current, identity, database, sql, searchPath, catalog)
      : recorded;
    let after = verdictUnder(opts.proposed, identity, database, sql, searchPath, catalog);
    // A PREPARE or DECLARE line records no masks (it returns no rows): against it, only a refusal counts.
    if (!opts.current && holdsStatement(sql, catalog, searchPath) && after.decision === 'masked')
      after = { decision: 'allowed' };
    const change = changeOf(before, after);
    if (change === undefined) continue;
    counts[change] += occurrences;
    changes.push({ identity, database, sql, occurrences, change, before, after });
  }
  return { lines: read, statements: groups.size, skipped, counts, changes };
}

/** The report as text: one block per change (user, statement, before → after), then the counts. */
export function renderReplay(r: ReplayReport): string {
  const v = (x: Verdict) =>
    x.decision === 'masked'
      ? `masked (${(x.masked ?? []).join(', ')})`
      : x.decision === 'refused'
        ? `refused: ${x.reason ?? ''}`
        : 'allowed';
  const out = r.changes.map(
    (c) =>
      `${c.identity} @ ${c.database} (${c.occurrences}×): ${c.sql}\n  ${c.change}: ${v(c.before)} → ${v(c.after)}\n`,
  );
  const total = Object.values(r.counts).reduce((a, b) => a + b, 0);
  out.push(
    `${r.changes.length} statement${r.changes.length === 1 ? '' : 's'} change (${total} of ${r.lines} audit lines; ${r.statements} distinct, ${r.skipped} skipped): ` +
      Object.entries(r.counts)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') +
      '\n',
  );
  return out.join('');
}

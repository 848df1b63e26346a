// Analysis micro-benchmark over the corpus: cold analysis, cached decision, new-literal (normalized) hits, parse alone.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { DEMO_DIR } from '../src/embedded/demo.js';
import { parseConfig } from '../src/policy/config-load.js';
import type { DecideContext } from '../src/policy/decide-context.js';
import { DecisionCache } from '../src/policy/decision-cache.js';
import { type AnalyzeOptions, analyze, createAnalysisCache, loadParser } from '../src/sql/analyze.js';
import { loadDemoCatalog } from '../test/fixtures/demo-catalog.js';
import { median, percentile } from './stats.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The ~400-character CTE with joins of test/fixtures/bench-query.ts (DESIGN.md's parse-time example). */
export const LONG_STATEMENT = `WITH recent AS (SELECT o.user_id, sum(o.amount) AS total, max(o.id) AS last_id FROM orders o
 WHERE o.amount > 10 GROUP BY o.user_id) SELECT u.id, u.name, g.name AS org, r.total,
 (SELECT count(*) FROM orders x WHERE x.user_id = u.id) AS n FROM users u JOIN orgs g ON g.id = u.org_id
 LEFT JOIN recent r ON r.user_id = u.id WHERE u.name LIKE 'A%' AND r.total IS NOT NULL ORDER BY r.total DESC, u.id LIMIT 20`;

/** pgbench -S's statement, as simple mode sends it (a new literal each time). */
const PGBENCH_STATEMENT = 'SELECT abalance FROM pgbench_accounts WHERE aid = 48213;';

/** Median and p99 in microseconds over per-call samples. */
export interface Micros {
  readonly medianUs: number;
  readonly p99Us: number;
  readonly samples: number;
}

/** What the analysis section measured. */
export interface AnalysisResults {
  readonly statements: number;
  readonly coldCorpus: Micros;
  readonly coldLong: Micros & { readonly chars: number };
  readonly cachedDecision: Micros;
  readonly normalizedHit: Micros;
  readonly parsePgbench: Micros;
}

interface Stmt {
  readonly sql: string;
  readonly searchPath: readonly string[];
  readonly transactionStartSearchPath?: readonly string[];
}

/** Every statement of corpus/analysis and corpus/statements with its search_path. */
function loadStatements(): Stmt[] {
  const out: Stmt[] = [];
  const adir = path.join(ROOT, 'corpus/analysis');
  for (const f of fs.readdirSync(adir).filter((n) => n.endsWith('.yaml'))) {
    const cases = YAML.parse(fs.readFileSync(path.join(adir, f), 'utf8')) as {
      sql: string;
      search_path?: string[];
    }[];
    for (const c of cases) out.push({ sql: c.sql, searchPath: c.search_path ?? ['public'] });
  }
  const sdir = path.join(ROOT, 'corpus/statements');
  for (const f of fs.readdirSync(sdir).filter((n) => n.endsWith('.yaml'))) {
    const doc = YAML.parse(fs.readFileSync(path.join(sdir, f), 'utf8')) as {
      cases: { sql: string; searchPath?: string[]; transactionStartSearchPath?: string[] }[];
    };
    for (const c of doc.cases)
      out.push({
        sql: c.sql,
        searchPath: c.searchPath ?? ['public'],
        ...(c.transactionStartSearchPath ? { transactionStartSearchPath: c.transactionStartSearchPath } : {}),
      });
  }
  return out;
}

function micros(samplesNs: readonly number[]): Micros {
  return {
    medianUs: median(samplesNs) / 1000,
    p99Us: percentile(samplesNs, 99) / 1000,
    samples: samplesNs.length,
  };
}

/** Times `fn` once, in nanoseconds. */
function timeNs(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0);
}

/**
 * Measures, in this process, over the demo catalog fixture: cold analyze() (parse + analysis, no
 * cache) per corpus statement and for the ~400-character CTE; the cached path the proxy takes per
 * statement (analysis cache exact hit + decision cache hit, role `analyst` with hidden columns);
 * a normalized hit (same statement, new literal: parse + normalize, no analysis); and the parse
 * alone of pgbench's statement. `passes` measured passes follow 3 warm-up passes (JIT).
 */
export async function benchAnalysis(passes: number): Promise<AnalysisResults> {
  const parser = await loadParser(15);
  const catalog = loadDemoCatalog();
  const stmts = loadStatements();
  const optsOf = (s: Stmt): AnalyzeOptions => ({
    catalog,
    searchPath: s.searchPath,
    ...(s.transactionStartSearchPath ? { transactionStartSearchPath: s.transactionStartSearchPath } : {}),
  });
  const opts = stmts.map(optsOf);

  const cold: number[] = [];
  for (let p = 0; p < passes + 3; p++) {
    stmts.forEach((s, i) => {
      const ns = timeNs(() => analyze(s.sql, opts[i] as AnalyzeOptions));
      if (p >= 3) cold.push(ns);
    });
  }

  const longOpts: AnalyzeOptions = { catalog, searchPath: ['public'] };
  const long: number[] = [];
  for (let i = 0; i < 200 + passes * 100; i++) {
    const ns = timeNs(() => analyze(LONG_STATEMENT, longOpts));
    if (i >= 200) long.push(ns);
  }

  const demo = parseConfig(
    fs.readFileSync(path.join(DEMO_DIR, 'pgwarden.yaml'), 'utf8'),
    path.join(DEMO_DIR, 'pgwarden.yaml'),
    { PGWARDEN_UPSTREAM_PORT: '5432', PGWARDEN_UPSTREAM_PASSWORD: 'x' },
  );
  const ctx: DecideContext = { config: demo.config, connection: 'proxified', database: 'demo', catalog };
  const roles = ['analyst'];
  const cache = createAnalysisCache();
  const decisions = new DecisionCache();
  const cached: number[] = [];
  for (let p = 0; p < passes * 5 + 3; p++) {
    stmts.forEach((s, i) => {
      const ns = timeNs(() => decisions.decide(cache.analyze(s.sql, opts[i] as AnalyzeOptions), roles, ctx));
      if (p >= 3) cached.push(ns);
    });
  }

  const norm: number[] = [];
  for (let i = 0; i < 500 + passes * 200; i++) {
    const sql = `SELECT name FROM users WHERE id = ${100_000 + i}`;
    const ns = timeNs(() => decisions.decide(cache.analyze(sql, longOpts), roles, ctx));
    if (i >= 500) norm.push(ns);
  }

  const parse: number[] = [];
  for (let i = 0; i < 500 + passes * 200; i++) {
    const ns = timeNs(() => parser.parse(PGBENCH_STATEMENT));
    if (i >= 500) parse.push(ns);
  }

  return {
    statements: stmts.length,
    coldCorpus: micros(cold),
    coldLong: { ...micros(long), chars: LONG_STATEMENT.length },
    cachedDecision: micros(cached),
    normalizedHit: micros(norm),
    parsePgbench: micros(parse),
  };
}

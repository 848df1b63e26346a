// Every statement the project knows, gathered for the noninterference harness: corpus files, e2e tests, parse-coverage.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { parseCases } from '../e2e/transparency/wire-session.js';
import { PARSE_COVERAGE_FILE } from './databases.js';
import type { Stmt } from './harness.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const NI_CORPUS = path.join(ROOT, 'corpus/noninterference');

type Item = { id?: unknown; name?: unknown; sql?: unknown };

function items(doc: unknown): Item[] {
  if (Array.isArray(doc)) return doc as Item[];
  const cases = (doc as { cases?: unknown } | null)?.cases;
  return Array.isArray(cases) ? (cases as Item[]) : [];
}

function fromYaml(rel: string): Stmt[] {
  const doc = YAML.parse(fs.readFileSync(path.join(ROOT, rel), 'utf8')) as unknown;
  return items(doc)
    .map((it, i) => ({ it, i }))
    .filter(({ it }) => typeof it.sql === 'string')
    .map(({ it, i }) => ({
      id: `${rel}#${typeof it.id === 'string' || typeof it.id === 'number' ? it.id : typeof it.name === 'string' ? it.name : i}`,
      sql: it.sql as string,
    }));
}

function yamlFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir))
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => `${dir}/${f}`);
}

const SQL_START =
  /^\s*(select|with|insert|update|delete|values|table|explain|prepare|execute|declare|fetch|move|close|begin|start|commit|rollback|savepoint|release|set|show|reset|copy|create|drop|alter|grant|revoke|listen|unlisten|notify|lock|vacuum|analyze|discard|deallocate|call|do|merge|truncate|comment|security|refresh|cluster|reindex|checkpoint|load)\b/i;

/** String literals in the e2e tests that read as SQL (no `${…}` interpolation): a broad, automatic curation. */
function fromE2e(): Stmt[] {
  const out: Stmt[] = [];
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
      const p = path.join(dir, d.name);
      return d.isDirectory() ? walk(p) : p.endsWith('.ts') ? [p] : [];
    });
  const lit = /'((?:[^'\\\n]|\\.)*)'|"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\$]|\\.|\$(?!\{))*)`/g;
  for (const file of walk(path.join(ROOT, 'test/e2e')).sort()) {
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(lit)) {
      const raw = m[1] ?? m[2] ?? m[3];
      if (raw === undefined || !SQL_START.test(raw) || !/\s/.test(raw.trim()) || raw.length < 8) continue;
      // Only the escapes a SQL string in a test would use.
      const sql = raw.replace(/\\(['"`\\])/g, '$1').replace(/\\n/g, '\n');
      // A NUL cannot be sent in a Query message: those literals test the wire codec, not SQL.
      if (sql.includes('\0') || /\\[0x]/.test(raw)) continue;
      const line = text.slice(0, m.index).split('\n').length;
      out.push({ id: `${path.relative(ROOT, file)}:${line}`, sql });
    }
  }
  return out;
}

function fromTransparency(): Stmt[] {
  const file = path.join(ROOT, 'test/e2e/transparency/cases.sql');
  return parseCases(fs.readFileSync(file, 'utf8')).cases.map((c) => ({
    id: `test/e2e/transparency/cases.sql:${c.line + 1}`,
    sql: c.sql,
  }));
}

function fromParseCoverage(): Stmt[] {
  const doc = JSON.parse(fs.readFileSync(PARSE_COVERAGE_FILE, 'utf8')) as {
    cases: { id: number; sql: string }[];
  };
  return doc.cases.map((c) => ({ id: `parse-coverage.json#${c.id}`, sql: c.sql }));
}

/** Regression cases this harness found (corpus/noninterference/cases.yaml), when the file exists. */
export function regressionCases(): Stmt[] {
  const rel = 'corpus/noninterference/cases.yaml';
  return fs.existsSync(path.join(ROOT, rel)) ? fromYaml(rel) : [];
}

/** Every known statement, deduplicated by text (the first source wins), with the count per source. */
export function knownStatements(): { stmts: Stmt[]; perSource: Record<string, number> } {
  const groups: [string, Stmt[]][] = [
    ['corpus/noninterference', regressionCases()],
    ['corpus/analysis', yamlFiles('corpus/analysis').flatMap(fromYaml)],
    ['corpus/statements', yamlFiles('corpus/statements').flatMap(fromYaml)],
    ['corpus/attacks', yamlFiles('corpus/attacks').flatMap(fromYaml)],
    ['corpus/policy', fromYaml('corpus/policy/demo.yaml')],
    ['parse-coverage.json', fromParseCoverage()],
    ['corpus/parse-coverage', fromYaml('corpus/parse-coverage/expected.yaml')],
    ['test/e2e', fromE2e()],
    ['test/e2e/transparency', fromTransparency()],
  ];
  const seen = new Set<string>();
  const stmts: Stmt[] = [];
  const perSource: Record<string, number> = {};
  for (const [source, list] of groups) {
    perSource[source] = 0;
    for (const s of list) {
      const key = s.sql.trim();
      if (key === '' || seen.has(key)) continue;
      // A NUL cannot be sent in a Query message (the client encoder refuses it): counted, not run.
      if (key.includes('\0')) {
        perSource['unsendable (NUL byte)'] = (perSource['unsendable (NUL byte)'] ?? 0) + 1;
        continue;
      }
      seen.add(key);
      stmts.push(s);
      perSource[source]++;
    }
  }
  return { stmts, perSource };
}

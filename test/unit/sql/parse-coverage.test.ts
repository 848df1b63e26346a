// Every statement of the shared parse-coverage corpus: PG15-valid ones analyze or are refused for a specific reason; the rest are refused 42601.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type { Catalog } from '../../../src/catalog/types.js';
import type { Analysis, StatementKind } from '../../../src/sql/analysis-types.js';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { type CoverageCase, parseCoverageCatalog } from './parse-coverage-catalog.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const CORPUS = '/work/shared/corpus/parse-coverage.json';
const EXPECTED = path.resolve(here, '../../../corpus/parse-coverage/expected.yaml');

/** What expected.yaml records per case: per statement its kind, or its refusal SQLSTATE and message. */
interface ExpectedStatement {
  node: string;
  kind: StatementKind;
  refused?: string;
  reason?: string;
}
interface ExpectedCase {
  id: number;
  sql: string;
  refused?: string;
  statements?: ExpectedStatement[];
}

/** Kinds a node type may produce: a row statement its own action (SELECT INTO and EXPLAIN/PREPARE/DECLARE vary). */
const FIXED_KIND: Record<string, StatementKind> = {
  InsertStmt: 'INSERT',
  UpdateStmt: 'UPDATE',
  DeleteStmt: 'DELETE',
  MergeStmt: 'MERGE',
  VariableShowStmt: 'SESSION',
  DiscardStmt: 'SESSION',
  DeallocateStmt: 'SESSION',
  ClosePortalStmt: 'SESSION',
  FetchStmt: 'SESSION',
  UnlistenStmt: 'SESSION',
  ExecuteStmt: 'SESSION',
  CreateTableAsStmt: 'MANAGE',
  ViewStmt: 'MANAGE',
  CopyStmt: 'MANAGE',
};

function summarize(c: CoverageCase, a: Analysis): ExpectedCase {
  if (a.statements.length === 0 && a.refusal) return { id: c.id, sql: c.sql, refused: a.refusal.sqlstate };
  return {
    id: c.id,
    sql: c.sql,
    statements: a.statements.map((s) => ({
      node: s.nodeType,
      kind: s.kind,
      ...(s.refusal ? { refused: s.refusal.sqlstate, reason: s.refusal.message } : {}),
    })),
  };
}

const corpus = JSON.parse(fs.readFileSync(CORPUS, 'utf8')) as { cases: CoverageCase[] };
let catalog: Catalog;
const actual: ExpectedCase[] = [];

beforeAll(async () => {
  await loadParser(15);
  catalog = await parseCoverageCatalog(corpus.cases);
});

describe('parse-coverage.json', () => {
  it('has 402 statements, 384 valid in PG15', () => {
    expect(corpus.cases.length).toBe(402);
    expect(corpus.cases.filter((c) => c.valid_pg15).length).toBe(384);
  });

  for (const c of corpus.cases) {
    it(`#${c.id} ${c.category}: ${c.sql.slice(0, 60)}`, () => {
      const a = analyze(c.sql, { catalog, searchPath: ['public'] });
      actual.push(summarize(c, a));
      if (!c.valid_pg15) {
        expect(a.refusal?.sqlstate).toBe('42601');
        expect(a.statements).toEqual([]);
        return;
      }
      expect(a.refusal?.sqlstate, a.refusal?.message).not.toBe('42601');
      expect(a.statements.map((s) => s.nodeType)).toEqual(c.statements_pg15);
      for (const s of a.statements) {
        const fixed = FIXED_KIND[s.nodeType];
        if (fixed) expect(s.kind, s.nodeType).toBe(fixed);
        if (s.nodeType === 'SelectStmt') expect(['SELECT', 'MANAGE']).toContain(s.kind);
        if (s.refusal) {
          // A specific reason: a SQLSTATE Postgres uses, a message, never an internal error.
          expect(s.refusal.sqlstate).toMatch(
            /^(42P01|42703|42702|42883|42P10|42601|42803|0A000|22023|42P09|42P19|42804|42809|42939|42P18)$/,
          );
          expect(s.refusal.message).not.toMatch(/could not analyze|undefined|\[object/);
        }
      }
    });
  }

  it('matches corpus/parse-coverage/expected.yaml (UPDATE_EXPECTED=1 rewrites it)', () => {
    actual.sort((x, y) => x.id - y.id);
    const text = `# What analyze() does with each statement of /work/shared/corpus/parse-coverage.json, over the
# demo catalog extended with the tables the statements name (test/unit/sql/parse-coverage-catalog.ts).
# Per case: refused (SQLSTATE) for a string the PG15 grammar rejects, else per statement its node
# type, kind, and — when the analysis refuses it — the SQLSTATE and reason. Review changes here.
${YAML.stringify(actual, { lineWidth: 0 })}`;
    if (process.env.UPDATE_EXPECTED === '1') fs.writeFileSync(EXPECTED, text);
    expect(text).toBe(fs.readFileSync(EXPECTED, 'utf8'));
  });
});

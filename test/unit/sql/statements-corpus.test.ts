// Runs corpus/statements/*.yaml: statement kinds, session effects, MANAGE reasons, allowlists and refusals over the demo catalog.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import YAML from 'yaml';
import type {
  Analysis,
  ColumnUse,
  Requirement,
  SessionEffect,
  StatementAnalysis,
} from '../../../src/sql/analysis-types.js';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

/** One expected statement; every field but `node` is optional and, when present, compared exactly. */
interface ExpectedStatement {
  node: string;
  kind?: string;
  /** `MANAGE (reason)`, `SELECT public.users`, `SELECT public.users(ssn)`; compared as sets. */
  requirements?: string[];
  /** Requirements that must be among them (for long introspection queries). */
  requirementsInclude?: string[];
  /** `output 0 public.users.ssn`, `compute COPY TO public.users.ssn`, `test WHERE …`, `whole-row public.users`. */
  uses?: string[];
  /** `begin`, `set-search-path app,public`, `set-search-path local app`, `prepare p`, … */
  effects?: string[];
  /** Result column names. */
  columns?: string[];
  refusal?: { sqlstate: string; message?: string };
}

interface Case {
  name: string;
  sql: string;
  searchPath?: string[];
  transactionStartSearchPath?: string[];
  /** No MANAGE requirement and no refusal (introspection queries). */
  noManage?: boolean;
  statements?: ExpectedStatement[];
  refusal?: { sqlstate: string; message?: string };
}

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../corpus/statements');

export function requirementText(r: Requirement): string {
  const o = r.object;
  if (o.level === 'database') return `${r.action} (${r.reason})`;
  if (o.level === 'table') return `${r.action} ${o.schema}.${o.table}`;
  return `${r.action} ${o.schema}.${o.table}(${o.column})`;
}

export function useText(u: ColumnUse): string {
  if (u.use === 'whole-row') return `whole-row ${u.schema}.${u.table}`;
  const col = `${u.schema}.${u.table}.${u.column}`;
  if (u.use === 'output') return `output ${u.outputIndex} ${col}`;
  if (u.use === 'test') return `test ${u.clause} ${col}`;
  if (u.use === 'compute') return `compute ${u.context} ${col}`;
  return `write-target ${col}`;
}

export function effectText(e: SessionEffect): string {
  switch (e.kind) {
    case 'set-search-path':
      return `set-search-path ${e.local ? 'local ' : ''}${e.path.join(',')}`;
    case 'savepoint':
    case 'rollback-to':
    case 'release':
    case 'execute':
    case 'fetch':
    case 'prepare':
    case 'declare-cursor':
      return `${e.kind} ${e.name}`;
    case 'deallocate':
    case 'close-cursor':
      return `${e.kind} ${e.name ?? 'ALL'}`;
    default:
      return e.kind;
  }
}

const sortUnique = (xs: string[]) => [...new Set(xs)].sort();

function checkStatement(s: StatementAnalysis, e: ExpectedStatement): void {
  expect(s.nodeType).toBe(e.node);
  if (e.kind !== undefined) expect(s.kind).toBe(e.kind);
  if (e.requirements !== undefined) {
    expect(sortUnique(s.requirements.map(requirementText))).toEqual(sortUnique(e.requirements));
  }
  if (e.requirementsInclude !== undefined) {
    const have = new Set(s.requirements.map(requirementText));
    for (const r of e.requirementsInclude) expect(have, r).toContain(r);
  }
  if (e.uses !== undefined) expect(sortUnique(s.uses.map(useText))).toEqual(sortUnique(e.uses));
  if (e.effects !== undefined) expect(s.sessionEffects.map(effectText)).toEqual(e.effects);
  if (e.columns !== undefined) expect(s.resultColumns.map((c) => c.name)).toEqual(e.columns);
  if (e.refusal !== undefined) {
    expect(s.refusal?.sqlstate, JSON.stringify(s.refusal)).toBe(e.refusal.sqlstate);
    if (e.refusal.message) expect(s.refusal?.message).toContain(e.refusal.message);
  } else {
    expect(s.refusal, JSON.stringify(s.refusal)).toBeUndefined();
  }
}

function checkCase(a: Analysis, c: Case): void {
  if (c.refusal) {
    expect(a.refusal?.sqlstate, JSON.stringify(a.refusal)).toBe(c.refusal.sqlstate);
    if (c.refusal.message) expect(a.refusal?.message).toContain(c.refusal.message);
  }
  if (c.noManage) {
    expect(a.refusal, JSON.stringify(a.refusal)).toBeUndefined();
    for (const s of a.statements) {
      const manage = s.requirements.filter((r) => r.action === 'MANAGE').map(requirementText);
      expect(manage).toEqual([]);
    }
  }
  if (c.statements) {
    expect(a.statements.map((s) => s.nodeType)).toEqual(c.statements.map((s) => s.node));
    c.statements.forEach((e, i) => {
      checkStatement(a.statements[i] as StatementAnalysis, e);
    });
  }
}

const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .sort();

beforeAll(async () => {
  await loadParser(15);
});

for (const file of files) {
  const doc = YAML.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { cases: Case[] };
  describe(`corpus/statements/${file}`, () => {
    for (const c of doc.cases) {
      it(c.name, () => {
        const catalog = loadDemoCatalog();
        const a = analyze(c.sql, {
          catalog,
          searchPath: c.searchPath ?? ['public'],
          ...(c.transactionStartSearchPath
            ? { transactionStartSearchPath: c.transactionStartSearchPath }
            : {}),
        });
        checkCase(a, c);
      });
    }
  });
}

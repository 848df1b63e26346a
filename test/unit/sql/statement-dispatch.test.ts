// The dispatch table covers exactly the statement node types of libpg-query 15, and anything else is refused.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { analyzeParsed } from '../../../src/sql/statement-analyzer.js';
import { STATEMENT_HANDLERS, statementHandler } from '../../../src/sql/statement-dispatch.js';
import { buildOffsetMap } from '../../../src/sql/utf8-offsets.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

describe('STATEMENT_HANDLERS', () => {
  it('has one rule per *Stmt node of @pgsql/types (libpg-query 15), and no other', () => {
    const require = createRequire(import.meta.url);
    const pkg = path.dirname(require.resolve('@pgsql/types/package.json'));
    const dts = fs.readFileSync(path.join(pkg, 'types.d.ts'), 'utf8');
    const start = dts.indexOf('export type Node =');
    const union = dts.slice(start, dts.indexOf('export ', start + 1));
    const names = [...union.matchAll(/^\s+(\w+Stmt): \1;$/gm)].map((m) => m[1]).sort();
    expect(names.length).toBeGreaterThan(100);
    expect(Object.keys(STATEMENT_HANDLERS).sort()).toEqual(names);
  });
  it('has no handler for a name outside the table (or an inherited property)', () => {
    expect(statementHandler('FancyNewStmt')).toBeUndefined();
    expect(statementHandler('toString')).toBeUndefined();
  });
  it('refuses a node type without a rule 0A000', () => {
    const text = 'FANCY NEW';
    const a = analyzeParsed(
      {
        text,
        major: 15,
        statements: [{ nodeType: 'FancyNewStmt', node: {}, location: 0, length: text.length }],
        offsets: buildOffsetMap(text),
        tree: { stmts: [] },
      },
      loadDemoCatalog(),
      { searchPath: ['public'] },
      () => {
        throw new Error('not called');
      },
    );
    expect(a.refusal).toMatchObject({ sqlstate: '0A000', location: 0 });
    expect(a.statements[0]?.kind).toBe('MANAGE');
  });
  it('refuses non-top-level nodes', () => {
    const text = 'x';
    const a = analyzeParsed(
      {
        text,
        major: 15,
        statements: [{ nodeType: 'ReturnStmt', node: {}, location: 0, length: 1 }],
        offsets: buildOffsetMap(text),
        tree: { stmts: [] },
      },
      loadDemoCatalog(),
      { searchPath: ['public'] },
      () => {
        throw new Error('not called');
      },
    );
    expect(a.refusal?.sqlstate).toBe('0A000');
  });
});

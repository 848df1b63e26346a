// User-facing text speaks of the product: no string in src/ (messages, warnings, descriptions) mentions a seed or an issue.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../../src');
/** Words of the project's own history that users never read: "seed 000", "issue 4", "(seeds)". */
const HISTORY = /\b(seeds?|issues?)\b(\s+\d+)?/i;

/** Every string a TypeScript file of src/ can print: string literals and template literal parts. */
function stringsOf(file: string): { text: string; line: number }[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: { text: string; line: number }[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      // Import specifiers name modules, not messages.
      if (!ts.isImportDeclaration(node.parent) && !ts.isExportDeclaration(node.parent))
        out.push({ text: node.text, line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

describe('user-facing messages', () => {
  test('no string in src/ mentions a seed or an issue', () => {
    const hits: string[] = [];
    for (const entry of fs.readdirSync(SRC, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = path.join(entry.parentPath, entry.name);
      for (const s of stringsOf(file))
        if (HISTORY.test(s.text)) hits.push(`${path.relative(SRC, file)}:${s.line}: ${s.text}`);
    }
    expect(hits).toEqual([]);
  });

  test('the scan reads strings and template parts, never comments or import paths', () => {
    const file = path.join(os.tmpdir(), `pgwarden-messages-${process.pid}.ts`);
    fs.writeFileSync(
      file,
      "import x from './issue-tracker.js';\n// seed 000 says so\nconst a = 'plain';\nconst b = `see ${a} issue 4`;\n",
    );
    try {
      expect(stringsOf(file)).toEqual([
        { text: 'plain', line: 3 },
        { text: 'see ', line: 4 },
        { text: ' issue 4', line: 4 },
      ]);
    } finally {
      fs.rmSync(file);
    }
  });
});

// statementShape: one statement, its span and node type; none or several are 42601, the same again when the shape comes from the cache.
import { describe, expect, test } from 'vitest';
import { statementShape } from '../../../src/mcp/statement-shape.js';
import { ToolFailure } from '../../../src/mcp/tool-errors.js';

const PG15 = 150_004;

describe('statementShape', () => {
  test('one statement: its span (a trailing ; dropped) and node type', async () => {
    expect(await statementShape('SELECT 1 AS one;', PG15)).toEqual({
      text: 'SELECT 1 AS one',
      nodeType: 'SelectStmt',
    });
    expect(await statementShape('SHOW search_path', PG15)).toMatchObject({
      nodeType: 'VariableShowStmt',
    });
    // Asked again: the cached shape, equal.
    expect(await statementShape('SELECT 1 AS one;', PG15)).toEqual({
      text: 'SELECT 1 AS one',
      nodeType: 'SelectStmt',
    });
  });

  test('no statement or two: 42601, on every call; a text that does not parse is handed on whole', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(statementShape('SELECT 1; SELECT 2', PG15)).rejects.toMatchObject({
        sqlstate: '42601',
        message: expect.stringContaining('cannot run 2 statements'),
      });
      await expect(statementShape(' ; ', PG15)).rejects.toBeInstanceOf(ToolFailure);
    }
    expect(await statementShape('SELEC 1', PG15)).toEqual({ text: 'SELEC 1' });
  });
});

// The parser registry, statement splitting and UTF-8 byte → character offset conversion.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  loadedParser,
  loadParser,
  majorOfServerVersion,
  ParserUnavailableError,
  type PgParser,
  supportedParserMajors,
} from '../../../src/sql/parser.js';
import { buildOffsetMap } from '../../../src/sql/utf8-offsets.js';

let parser: PgParser;
beforeAll(async () => {
  parser = await loadParser(15);
});

function parseOk(sql: string) {
  const out = parser.parse(sql);
  if (!out.ok) throw new Error(`unexpected refusal ${JSON.stringify(out.refusal)}`);
  return out.parsed;
}

describe('parser registry', () => {
  it('has 15, loads it once, and refuses an unknown major with 0A000', async () => {
    expect(supportedParserMajors()).toContain(15);
    expect(loadedParser(15)).toBe(parser);
    expect(await loadParser(15)).toBe(parser);
    await expect(loadParser(14)).rejects.toBeInstanceOf(ParserUnavailableError);
    await expect(loadParser(99)).rejects.toMatchObject({ sqlstate: '0A000' });
    expect(loadedParser(16)).toBeUndefined();
  });
  it('reads the major of server_version_num', () => {
    expect(majorOfServerVersion(150018)).toBe(15);
    expect(majorOfServerVersion(160004)).toBe(16);
  });
});

describe('statement boundaries', () => {
  it('splits statements with stmt_location / stmt_len (absent = 0, last = to the end)', () => {
    const sql = 'SELECT 1; SELECT 2 ;  BEGIN  ';
    const p = parseOk(sql);
    expect(p.statements.map((s) => s.nodeType)).toEqual(['SelectStmt', 'SelectStmt', 'TransactionStmt']);
    expect(p.statements.map((s) => sql.slice(s.location, s.location + s.length))).toEqual([
      'SELECT 1',
      ' SELECT 2 ',
      '  BEGIN  ',
    ]);
  });
  it('converts byte offsets to characters (code points) after multi-byte text', () => {
    const sql = "SELECT 'é€😀'; SELECT 'ü' ; SELECT 3";
    const p = parseOk(sql);
    const chars = [...sql];
    const slice = (loc: number, len: number) => chars.slice(loc, loc + len).join('');
    expect(p.statements.map((s) => slice(s.location, s.length))).toEqual([
      "SELECT 'é€😀'",
      " SELECT 'ü' ",
      ' SELECT 3',
    ]);
    expect(p.offsets.ascii).toBe(false);
  });
  it('has no statements for blank and comment-only text', () => {
    expect(parseOk('').statements).toEqual([]);
    expect(parseOk('  \n ').statements).toEqual([]);
    expect(parseOk('/* c */ -- d').statements).toEqual([]);
    expect(parseOk(';;').statements).toEqual([]);
  });
});

describe('refusals', () => {
  it('refuses a syntax error 42601 at its character position', () => {
    const out = parser.parse("SELECT 'é€😀' = = 1");
    expect(out.ok).toBe(false);
    if (!out.ok) {
      expect(out.refusal.sqlstate).toBe('42601');
      expect(out.refusal.message).toBe('syntax error at or near "="');
      expect(out.refusal.location).toBe(15); // the second '=', counting code points
    }
  });
  it('refuses unterminated literals and comments', () => {
    for (const sql of ["SELECT 'x", 'SELECT 1 /* x', 'SELECT $1$tag$']) {
      const out = parser.parse(sql);
      expect(out.ok ? null : out.refusal.sqlstate).toBe('42601');
    }
  });
  it('refuses a NUL character (the wire would cut the string there)', () => {
    const out = parser.parse('SELECT 1\u0000; DROP TABLE users');
    expect(out.ok ? null : out.refusal).toMatchObject({ sqlstate: '42601', location: 8 });
  });
  it('refuses text that has no UTF-8 encoding', () => {
    const out = parser.parse('SELECT 1 \ud800');
    expect(out.ok ? null : out.refusal.sqlstate).toBe('22021');
  });
});

describe('buildOffsetMap', () => {
  it('is the identity for ASCII', () => {
    const m = buildOffsetMap('abc');
    expect([m.toChar(0), m.toChar(2), m.toChar(3), m.toChar(10)]).toEqual([0, 2, 3, 3]);
  });
  it('maps every byte of a multi-byte character to it', () => {
    const m = buildOffsetMap('aé😀b'); // bytes: a(0) é(1,2) 😀(3..6) b(7)
    expect([0, 1, 2, 3, 6, 7, 8].map(m.toChar)).toEqual([0, 1, 1, 2, 2, 3, 4]);
    expect(m.byteLength).toBe(8);
    expect(m.charLength).toBe(4);
  });
});

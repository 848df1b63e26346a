// Long literals set aside before parsing: the tree equals the direct parse but for the placeholders' values, or the original is parsed.
import fc from 'fast-check';
import { parseSync } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { ELIDE_TEXT_MIN, elideLongLiterals } from '../../../src/sql/literal-elision.js';
import { loadedParser, type PgParser } from '../../../src/sql/parser.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

let parser: PgParser;
beforeAll(async () => {
  await loadParser(15);
  parser = loadedParser(15) as PgParser;
});

const big = (n = ELIDE_TEXT_MIN) => 'a'.repeat(n);

/** The tree with every A_Const sval that is a placeholder replaced by `<elided>`. */
function blankPlaceholders(tree: unknown): unknown {
  return JSON.parse(JSON.stringify(tree), (k, v) =>
    k === 'sval' && typeof v === 'string' && v.startsWith('pgwarden_elided_') ? '<elided>' : v,
  );
}

/** The direct parse's tree with the sval of every A_Const located at one of `starts` (UTF-8 bytes) blanked the same way. */
function directTree(sql: string, starts: readonly number[]): unknown {
  const at = new Set(starts);
  return JSON.parse(JSON.stringify(parseSync(sql)), (k, v) => {
    if (k === 'A_Const' && v && typeof v === 'object' && at.has((v as { location?: number }).location ?? 0)) {
      const c = v as { sval?: { sval?: string } };
      if (c.sval) c.sval.sval = '<elided>';
    }
    return v;
  });
}

/** Whether the parse of `sql` went through a placeholder (some A_Const holds one). */
function elided(sql: string): boolean {
  const out = parser.parse(sql);
  return out.ok && JSON.stringify(out.parsed.tree).includes('pgwarden_elided_');
}

describe('elideLongLiterals', () => {
  it('replaces a long standard literal by a short placeholder literal, with byte offsets of both', () => {
    const sql = `SELECT '${big()}' = 'x' AS same`;
    const e = elideLongLiterals(sql);
    expect(e?.spans).toHaveLength(1);
    const s = e?.spans[0];
    expect(s?.start).toBe(7);
    expect(s?.end).toBe(7 + ELIDE_TEXT_MIN + 2);
    expect(s?.at).toBe(7);
    expect(e?.text).toBe(`SELECT '${s?.value}' = 'x' AS same`);
  });

  it('leaves short texts alone, and gives up on a string continued across a newline', () => {
    expect(elideLongLiterals(`SELECT '${big(2000)}'`)).toBeNull();
    expect(elideLongLiterals(`SELECT '${big()}'\n  'tail'`)).toBeNull();
    expect(elideLongLiterals(`SELECT '${big()}' -- c\n`)).not.toBeNull();
  });

  it('reads E-strings with backslash escapes, dollar quotes and comments as PostgreSQL does', () => {
    // Inside the E-string, \' is a quote: the whole run up to the last quote is one literal.
    const sql = `SELECT E'${big()}\\' , email , ' AS x FROM users`;
    const e = elideLongLiterals(sql);
    expect(e?.spans).toHaveLength(1);
    expect(e?.text).toBe(`SELECT '${e?.spans[0]?.value}' AS x FROM users`);
    const d = elideLongLiterals(`SELECT $q$ '${big()} $$ $q$ AS x /* ' */ -- '\n`);
    expect(d?.spans).toHaveLength(1);
    // A quote inside a comment or a quoted identifier opens nothing.
    const c = elideLongLiterals(`SELECT 1 AS "it's" /* ' /* ' */ ' */, '${big()}' AS y`);
    expect(c?.spans).toHaveLength(1);
  });
});

describe('PgParser.parse with long literals', () => {
  it('parses a 60 MB literal in a comparison quickly, with offsets on the original text', () => {
    const lit = 'a'.repeat(60_000_000);
    const sql = `SELECT '${lit}' = 'x' AS same, 1 AS one`;
    const t = performance.now();
    const out = parser.parse(sql, { maxParsedBytes: 1 << 20 });
    const ms = performance.now() - t;
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.parsed.statements[0]?.length).toBe(sql.length);
    const targets = JSON.stringify(out.parsed.tree);
    // The `1` of `1 AS one` is located after the literal in the original text.
    expect(targets).toContain(`"location":${sql.indexOf('1 AS one')}`);
    // About 0.5 s here; parsing the 60 MB literal itself would take minutes. Slack for a loaded machine.
    expect(ms).toBeLessThan(15_000);
  });

  it('analyzes the statement as the same one with a short literal: same columns, same uses', () => {
    const catalog = loadDemoCatalog();
    const long = analyze(`SELECT name, '${big()}' AS pad FROM users WHERE email <> '${big()}'`, {
      catalog,
      searchPath: ['public'],
    });
    const short = analyze(`SELECT name, 'a' AS pad FROM users WHERE email <> 'b'`, {
      catalog,
      searchPath: ['public'],
    });
    expect(long.refusal).toBeUndefined();
    // Everything but the offsets, which differ with the literals' lengths.
    const shape = (a: typeof long) =>
      JSON.parse(
        JSON.stringify(a, (k, v) => (['location', 'length', 'position', 'definition'].includes(k) ? 0 : v)),
      );
    expect(long.statements[0]?.uses.length).toBeGreaterThan(1);
    expect(shape(long)).toEqual(shape(short));
  });

  it('never uses a placeholder where the analysis reads the literal: reg* casts, function arguments, SET, DDL', () => {
    for (const sql of [
      `SELECT '${big()}'::regclass`,
      `SELECT length('${big()}')`,
      `SET application_name = '${big()}'`,
      `COMMENT ON TABLE users IS '${big()}'`,
      `CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 -- ${big()} $$`,
      `SELECT 1 ORDER BY '${big()}'`,
    ]) {
      expect(elided(sql), sql.slice(0, 40)).toBe(false);
    }
    expect(elided(`SELECT '${big()}'::text AS t`)).toBe(true);
    expect(elided(`INSERT INTO users (name) VALUES ('${big()}')`)).toBe(true);
  });

  it('refuses a text over the bound with 54000 when its literals cannot be set aside', () => {
    const out = parser.parse(`SELECT length('${big(2 << 20)}')`, { maxParsedBytes: 1 << 20 });
    expect(out.ok).toBe(false);
    if (out.ok) return;
    expect(out.refusal.sqlstate).toBe('54000');
    expect(out.refusal.message).toMatch(
      /^statement too long for pgwarden to analyze: 2097169 bytes, over the limit of 1048576/,
    );
  });

  it('property: a used elided tree equals the direct parse but for the placeholder values', () => {
    // Fragments chosen to trip a scan that reads the text differently from PostgreSQL's lexer.
    const fragment = fc.constantFrom(
      ` '${big(1500)}' `,
      ` E'${big(1500)}\\' ' `,
      ` E'\\\\' `,
      ` $$ ' $$ `,
      ` $a$ $b$ '${big(1500)}' $a$ `,
      ` $a$${big(1500)}$a$ `,
      ' "a""b" ',
      ` "'" `,
      " /* ' /* ' */ ' */ ",
      " -- '\n",
      ' a$b ',
      ' $1 ',
      ` U&'${big(1500)}' `,
      ` B'0101' `,
      ` X'${'f'.repeat(1500)}' `,
      ` N'${big(1500)}' `,
      ` e'${big(1500)}' `,
      ` x'' `,
      " 'it''s' ",
      `\n'${big(1500)}'\n`,
      ' , ',
      ' || ',
      ' email ',
      ' 1e5 ',
    );
    fc.assert(
      fc.property(fc.array(fragment, { minLength: 1, maxLength: 8 }), (parts) => {
        const sql = `SELECT ${parts.join('')} ${big()}`;
        const e = elideLongLiterals(sql);
        const out = parser.parse(sql);
        let direct: unknown;
        try {
          direct = parseSync(sql);
        } catch {
          direct = undefined;
        }
        if (!out.ok) {
          expect(direct).toBeUndefined();
          return;
        }
        const used = JSON.stringify(out.parsed.tree).includes('pgwarden_elided_');
        expect(blankPlaceholders(out.parsed.tree)).toEqual(
          used ? directTree(sql, e?.spans.map((s) => s.start) ?? []) : direct,
        );
      }),
      { numRuns: 300 },
    );
  });
});

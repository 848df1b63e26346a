// Property: spelling changes and wrapping never change which base columns a statement uses, or how.
import fc from 'fast-check';
import { loadModule } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ColumnUse } from '../../../../src/sql/analysis-types.js';
import { loadDemoCatalog } from '../../../fixtures/demo-catalog.js';
import { analyzeCase } from './corpus-format.js';

beforeAll(async () => {
  await loadModule();
});

/** How an identifier is spelled: as is, quoted, or in another case unquoted (all the same name). */
type Spell = (name: string) => string;

/** Queries over the demo schema, written with a speller for every identifier and alias names a, b. */
const TEMPLATES: ((s: Spell, a: string, b: string) => string)[] = [
  (s, a) =>
    `SELECT ${a}.${s('id')}, ${a}.${s('email')} FROM ${s('users')} ${a} WHERE ${a}.${s('ssn')} LIKE 'a%'`,
  (s, a, b) =>
    `SELECT ${a}.${s('name')}, ${b}.${s('amount')} FROM ${s('users')} ${a} JOIN ${s('orders')} ${b} ON ${b}.${s('user_id')} = ${a}.${s('id')} ORDER BY ${a}.${s('email')}`,
  (s, a) =>
    `SELECT ${s('org_id')}, count(*) FROM ${s('users')} ${a} GROUP BY ${s('org_id')} HAVING max(${a}.${s('ssn')}) > '1'`,
  (s, a) => `SELECT DISTINCT ${a}.${s('email')} FROM ${s('users')} ${a}`,
  (s, a) => `SELECT lower(${a}.${s('email')}) AS ${s('e')}, ${a}.${s('id')} FROM ${s('users')} ${a}`,
  (s, a, b) =>
    `SELECT ${a}.${s('id')} FROM ${s('users')} ${a} WHERE EXISTS (SELECT 1 FROM ${s('orders')} ${b} WHERE ${b}.${s('note')} = ${a}.${s('ssn')})`,
  (s, a) =>
    `SELECT ${s('x')}.${s('e')} FROM (SELECT ${a}.${s('email')} AS ${s('e')} FROM ${s('users')} ${a}) ${s('x')} WHERE ${s('x')}.${s('e')} <> ''`,
  (s, a, b) =>
    `SELECT ${a}.${s('email')} FROM ${s('users')} ${a} UNION ALL SELECT ${b}.${s('note')} FROM ${s('orders')} ${b}`,
  (s, a, b) =>
    `SELECT ${a}.${s('email')} FROM ${s('users')} ${a} INTERSECT SELECT ${b}.${s('note')} FROM ${s('orders')} ${b}`,
  (s, a) =>
    `SELECT ${s('id')}, row_number() OVER (PARTITION BY ${a}.${s('org_id')} ORDER BY ${a}.${s('ssn')}) FROM ${s('users')} ${a}`,
  (s, a, b) => `SELECT * FROM ${s('users')} ${a} JOIN ${s('orders')} ${b} USING (${s('id')})`,
  (s, a, b) => `SELECT ${a}.${s('secret')} FROM ${s('orgs')} ${a} NATURAL JOIN ${s('users')} ${b}`,
  (s, a) => `SELECT CASE WHEN ${a}.${s('ssn')} IS NULL THEN ${a}.${s('name')} END FROM ${s('users')} ${a}`,
  (s, a) => `SELECT count(*) FILTER (WHERE ${a}.${s('email')} LIKE '%x') FROM ${s('users')} ${a}`,
  (s, a) => `SELECT ${s('user_id')}, ${s('ssn_last4')} FROM ${s('user_secrets')} ${a}`,
  (s, a) => `SELECT row_to_json(${a}) FROM ${s('users')} ${a}`,
];

const plain: Spell = (n) => n;
const spellArb: fc.Arbitrary<Spell> = fc.constantFrom<Spell>(
  (n) => n,
  (n) => `"${n}"`,
  (n) => n.toUpperCase(),
  (n) => n.replace(/^./, (c) => c.toUpperCase()),
);
/** Alias names that are not keywords and do not collide with the schema's names. */
const aliasArb = fc.stringMatching(/^q[a-z]{0,5}$/).filter((s) => !['q'].includes(s));

function usesOf(sql: string): string[] {
  const r = analyzeCase(loadDemoCatalog(), { id: 'p', sql });
  if (r.refusal) return [`refused ${r.refusal.sqlstate}`];
  return r.uses
    .map((u: ColumnUse) => {
      const col = 'column' in u ? `.${u.column}` : '';
      const how =
        u.use === 'test' ? `test ${u.clause}` : u.use === 'output' ? `output ${u.outputIndex}` : u.use;
      return `${how} ${u.schema}.${u.table}${col}`;
    })
    .sort();
}

describe('column uses are invariant', () => {
  it('under alias renaming, re-quoting, case changes of unquoted names, and wrapping', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: TEMPLATES.length - 1 }),
        spellArb,
        aliasArb,
        aliasArb,
        fc.constantFrom('none', 'derived', 'cte'),
        (t, spell, a, b, wrap) => {
          fc.pre(a !== b);
          const template = TEMPLATES[t]!;
          const base = usesOf(template(plain, 'a1', 'b1'));
          expect(base.some((u) => u.startsWith('refused'))).toBe(false);
          // Re-quoting keeps a name only when it is already lower case; the other spellings fold.
          const respelled = template((n) => (spell(n).startsWith('"') ? `"${n}"` : spell(n)), a, b);
          let sql = respelled;
          if (wrap === 'derived') sql = `SELECT * FROM (${respelled}) AS wrapped`;
          if (wrap === 'cte') sql = `WITH wrapped AS (${respelled}) SELECT * FROM wrapped`;
          expect(usesOf(sql)).toEqual(base);
        },
      ),
      { numRuns: 300 },
    );
  });
});

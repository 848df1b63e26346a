// Wall 1 alone: with mask at read switched off (the text sent as written), the analysis keeps every read noninterferent.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { Harness, report } from './harness.js';
import { knownStatements } from './sources.js';

// alice reads only (no write action): with the rewrite off, Postgres computes over the real
// values and the analysis's refusals and wire masks alone stand between them and her.
let harness: Harness;
beforeAll(async () => {
  harness = await Harness.start(inject('pg'), 'nin', { walls: { seeChecks: true, rewrite: false } });
});
afterAll(async () => {
  await harness?.close();
});

describe('the analysis alone (mask at read off)', () => {
  test('every known statement: 0 leaks for reads', { timeout: 900_000 }, async () => {
    const { stmts } = knownStatements();
    const { outcomes, skipped } = await harness.run(stmts, { workers: 4, users: ['alice'] });
    console.log(report('analysis alone, known statements', outcomes, skipped));
    expect(
      outcomes.filter((o) => o.kind === 'leak').map((o) => `${o.stmt.id}: ${o.stmt.sql}\n  ${o.diff}`),
    ).toEqual([]);
    expect(outcomes.length).toBeGreaterThan(1000);
  });
});

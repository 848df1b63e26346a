// Noninterference over every known statement (corpus, e2e tests, parse-coverage): hidden values never change an answer.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { Harness, report, SEER, summarize } from './harness.js';
import { knownLeakFor, loadKnownLeaks } from './known-leaks.js';
import { knownStatements } from './sources.js';

let harness: Harness;
beforeAll(async () => {
  harness = await Harness.start(inject('pg'), 'nic');
});
afterAll(async () => {
  await harness?.close();
});

describe('noninterference: known statements', () => {
  test('sanity: a caller who sees the hidden columns gets different answers (the sides really differ)', async () => {
    for (const sql of [
      'select email from users',
      "select count(*) from users where ssn like '9%'",
      'select secret from orgs order by id',
      'select ssn_last4 from user_secrets',
      'select code from badges',
    ]) {
      expect((await harness.single({ id: 'sanity', sql }, SEER)).kind, sql).toBe('leak');
    }
    expect((await harness.single({ id: 'sanity', sql: 'select name from users' }, SEER)).kind).toBe('same');
  });

  test('every statement answers alike whatever the hidden values', { timeout: 1_500_000 }, async () => {
    const { stmts, perSource } = knownStatements();
    console.log(`noninterference corpus: ${stmts.length} distinct statements ${JSON.stringify(perSource)}`);
    expect(stmts.length).toBeGreaterThan(500);
    const started = Date.now();
    const { outcomes, skipped } = await harness.run(stmts, { workers: 4 });
    console.log(
      `${report('noninterference corpus', outcomes, skipped)}\n(${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
    const known = loadKnownLeaks();
    const leaks = outcomes.filter((o) => o.kind === 'leak');
    const unexpected = leaks.filter((o) => !knownLeakFor(o, known));
    const fixed = known.filter(
      (k) =>
        k.sql !== undefined && !leaks.some((o) => o.user === k.user && o.stmt.sql.trim() === k.sql?.trim()),
    );
    expect(
      unexpected.map((o) => `${o.user} ${o.stmt.id}: ${o.stmt.sql}\n  ${o.diff}`),
      'leaks not listed in corpus/noninterference/known-leaks.yaml',
    ).toEqual([]);
    expect(
      fixed.map((k) => `${k.id} (${k.user}): ${k.sql}`),
      'known leaks that no longer leak: remove them from known-leaks.yaml',
    ).toEqual([]);
    expect(summarize(outcomes).same).toBeGreaterThan(outcomes.length * 0.9);
  });
});

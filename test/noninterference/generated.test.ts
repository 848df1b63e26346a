// Noninterference over ≥ 5,000 generated statements per run (seeded: NI_SEED reproduces a run), with allowed/masked/refused counts.
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { fuzz } from './fuzz-run.js';
import { Harness } from './harness.js';

const COUNT = Number(process.env.NI_COUNT ?? 5000);
const SEED = process.env.NI_SEED ? Number(process.env.NI_SEED) : Date.now() % 2 ** 31;

let harness: Harness;
beforeAll(async () => {
  harness = await Harness.start(inject('pg'), 'nig');
});
afterAll(async () => {
  await harness?.close();
});

describe('noninterference: generated statements', () => {
  test(`${COUNT} statements from seed ${SEED} answer alike whatever the hidden values`, {
    timeout: 900_000,
  }, async () => {
    const started = Date.now();
    const r = await fuzz(harness, SEED, COUNT);
    console.log(`${r.text}\n(${((Date.now() - started) / 1000).toFixed(1)} s; rerun with NI_SEED=${SEED})`);
    expect(r.statements).toBeGreaterThanOrEqual(COUNT);
    expect(
      r.newLeaks.map((l) => `seed=${SEED} path=${l.path}: ${l.shrunk}`),
      'leaks: add each as a case in corpus/noninterference/cases.yaml (and known-leaks.yaml until fixed)',
    ).toEqual([]);
    expect(
      r.outcomes.filter((o) => o.kind === 'leak').length,
      'leaks (known ones included)',
    ).toBeGreaterThanOrEqual(0);
    expect(
      r.allowedShare,
      'fewer than a third of the generated statements were allowed',
    ).toBeGreaterThanOrEqual(1 / 3);
  });
});

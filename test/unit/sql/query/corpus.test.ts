// Runs every case of corpus/analysis against the query analysis over the demo catalog fixture.
import { loadModule } from 'libpg-query';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadDemoCatalog } from '../../../fixtures/demo-catalog.js';
import { actualCase, loadCorpus } from './corpus-format.js';

beforeAll(async () => {
  await loadModule();
});

const corpus = loadCorpus();

describe('corpus/analysis', () => {
  it('has at least 200 cases with unique ids', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(200);
    expect(new Set(corpus.map((x) => x.c.id)).size).toBe(corpus.length);
  });

  for (const { file, c } of corpus) {
    it(`${file} ${c.id}`, () => {
      const actual = actualCase(loadDemoCatalog(), c);
      if (c.refusal) {
        expect(actual.refusal?.sqlstate).toBe(c.refusal.sqlstate);
        expect(actual.refusal?.message_contains).toContain(c.refusal.message_contains);
        return;
      }
      expect(actual.refusal).toBeUndefined();
      if (c.kind) expect(actual.kind).toBe(c.kind);
      if (c.result_columns) expect(actual.result_columns).toEqual(c.result_columns);
      if (c.uses) expect(actual.uses).toEqual([...c.uses].sort());
      if (c.requirements) expect(actual.requirements).toEqual([...c.requirements].sort());
      if (c.functions) expect(actual.functions).toEqual([...c.functions].sort());
      if (c.catalog_relations) expect(actual.catalog_relations).toEqual([...c.catalog_relations].sort());
    });
  }
});

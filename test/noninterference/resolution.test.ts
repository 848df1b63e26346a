// Resolution differential: for every SELECT the corpus and the generator hold, the columns pgwarden binds equal those Postgres's parser bound (issue 13).
import fc from 'fast-check';
import { loadModule } from 'libpg-query';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { readCatalog } from '../../src/catalog/read-catalog.js';
import type { Catalog } from '../../src/catalog/types.js';
import { connectTo, createSchemaDatabase } from './databases.js';
import { statementArb } from './generator.js';
import { isolateSelects } from './isolate-select.js';
import { type Comparison, compareAll } from './resolution-differential.js';
import { knownStatements } from './sources.js';

const DB = 'resolution_diff';
const GENERATED = Number(process.env.RESOLUTION_GENERATED ?? 5000);
const SEED = process.env.NI_SEED ? Number(process.env.NI_SEED) : Date.now() % 2 ** 31;

let clients: pg.Client[] = [];
let catalog: Catalog;

beforeAll(async () => {
  await loadModule();
  const server = inject('pg');
  await createSchemaDatabase(server, DB);
  clients = await Promise.all([0, 1, 2].map(() => connectTo(server, DB, true)));
  for (const c of clients) await c.query('SET search_path = public');
  catalog = await readCatalog(clients[0] as pg.Client, 1);
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.end()));
});

function count(results: readonly Comparison[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) out[r.kind] = (out[r.kind] ?? 0) + 1;
  return out;
}

/** The distinct SELECT texts of `sqls` (top-level and isolated from the statements around them). */
function selectsOf(sqls: readonly string[]): string[] {
  return [...new Set(sqls.flatMap((s) => isolateSelects(s).map((x) => x.text)))];
}

describe('resolution differential', () => {
  test(`pgwarden binds every name of the corpus's SELECTs and ${GENERATED} generated statements' (seed ${SEED}) to the columns Postgres binds`, {
    timeout: 400_000,
  }, async () => {
    const started = Date.now();
    const known = selectsOf(knownStatements().stmts.map((s) => s.sql));
    const generated = selectsOf(
      fc.sample(statementArb, { seed: SEED, numRuns: GENERATED }).map((g) => g.sql),
    );
    const texts = [...new Set([...known, ...generated])];
    const results = await compareAll(clients, catalog, texts);
    const compared = results.filter((r) => r.kind === 'same' || r.kind === 'differs');
    console.log(
      `resolution differential: ${compared.length} SELECTs compared (${known.length} from the corpus, ${generated.length} generated; seed ${SEED}) ${JSON.stringify(count(results))} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    const differs = results.flatMap((r) =>
      r.kind === 'differs'
        ? [
            `${r.text}\n  pgwarden only: ${r.pgwardenOnly.join(', ')}\n  Postgres only: ${r.postgresOnly.join(', ')}`,
          ]
        : [],
    );
    expect(differs, 'each difference becomes a corpus/analysis case and is fixed').toEqual([]);
    expect(compared.length).toBeGreaterThan(1000);
  });
});

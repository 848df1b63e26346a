// The CI run of the wire fuzz: 50,000 random and mutated frontend messages through one session (issue 16 item 4).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { runWireFuzz } from '../helpers/wire-fuzz.js';

let proxy: TestProxy;
const logLines: Record<string, unknown>[] = [];
beforeAll(async () => {
  proxy = await startTestProxy(undefined, { logLines });
});
afterAll(async () => {
  await proxy.close();
});

describe('wire fuzz, CI size', () => {
  test('50,000 messages (a new seed each run unless PGWARDEN_WIRE_FUZZ_SEED is set): no XX000, no FATAL, no lost session', async () => {
    const seed = Number(process.env.PGWARDEN_WIRE_FUZZ_SEED ?? Date.now() % 1_000_000);
    const report = await runWireFuzz(
      proxy.port,
      { user: 'alice', password: 'alice', database: 'demo' },
      50_000,
      seed,
    ).catch((e: unknown) => {
      throw new Error(`seed ${seed}: ${(e as Error).message}`);
    });
    expect(report.messages).toBe(50_000);
    expect(report.codes.XX000).toBeUndefined();
    expect(logLines.filter((l) => l.event === 'relay-error')).toEqual([]);
  }, 900_000);
});

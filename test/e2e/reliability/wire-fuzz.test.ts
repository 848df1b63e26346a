// Random and mutated frontend messages of every kind: never XX000, never a lost session, other sessions unaffected (issue 16 item 4).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { runWireFuzz } from '../../helpers/wire-fuzz.js';

/** Sized for `npm test`; the CI suite (test/clients/wire-fuzz-ci.test.ts) runs 50,000. */
const MESSAGES = Number(process.env.PGWARDEN_WIRE_FUZZ_MESSAGES ?? 2000);

let proxy: TestProxy;
const logLines: Record<string, unknown>[] = [];
beforeAll(async () => {
  proxy = await startTestProxy(undefined, { logLines });
});
afterAll(async () => {
  await proxy.close();
});

describe('wire fuzz', () => {
  test(`${MESSAGES} random and mutated messages through one session`, async () => {
    const report = await runWireFuzz(
      proxy.port,
      { user: 'alice', password: 'alice', database: 'demo' },
      MESSAGES,
    );
    expect(report.messages).toBe(MESSAGES);
    expect(report.codes.XX000).toBeUndefined();
    // Malformed messages are answered 08P01 and invalid UTF-8 22021, at ERROR, and the session goes on.
    expect(report.codes['08P01']).toBeGreaterThan(0);
    expect(report.codes['22021']).toBeGreaterThan(0);
    expect(logLines.filter((l) => l.event === 'relay-error')).toEqual([]);
  }, 600_000);
});

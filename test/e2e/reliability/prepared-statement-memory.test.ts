// Issue 16 item 2: prepared statements count against the memory budget while kept; one that does not fit is refused with 53200 and the session goes on; Close, DEALLOCATE, DISCARD ALL and the session's end give it back.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { retainedCost, SESSION_RETAINED_SHARE } from '../../../src/proxy/retained-statements.js';
import { decodeDataRow } from '../../../src/wire/backend.js';
import { BackendCode } from '../../../src/wire/codes.js';
import { decodeErrorResponse } from '../../../src/wire/error-fields.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import { rssOf } from '../../helpers/memory-burst.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { RawClient } from '../../helpers/raw-client.js';
import { type Served, serveProcess, stopChild } from '../../helpers/serve-process.js';

const MiB = 2 ** 20;
const BUDGET = 32 * MiB;
/** A 1 MB statement: one long literal in a comparison, answering `same = false`. */
const TEXT = `SELECT '${'a'.repeat(1_000_000)}' = 'x' AS same`;
const COST = retainedCost(TEXT);
/** How many such statements one session may keep: its share of the budget. */
const FITS = Math.floor((BUDGET * SESSION_RETAINED_SHARE) / COST);

function withBudget(): Record<string, unknown> {
  const cfg = demoConfigObject();
  cfg.limits = { ...(cfg.limits as Record<string, unknown>), memory_budget_bytes: BUDGET };
  return cfg;
}

/** Sends `messages` then Sync; the answer as message letters, an ErrorResponse as `E <code>`. */
async function exchange(c: RawClient, ...messages: Buffer[]): Promise<string[]> {
  c.write(Buffer.concat([...messages, fe.sync()]));
  return (await c.untilReady(20_000)).map((f) => {
    if (f.code === BackendCode.ErrorResponse) return `E ${decodeErrorResponse(f.payload).code}`;
    if (f.code === BackendCode.DataRow) return `D ${decodeDataRow(f.payload).map((v) => v?.toString())}`;
    return String.fromCharCode(f.code);
  });
}

/** A Simple Query's answer, as {@link exchange}'s. */
async function simple(c: RawClient, sql: string): Promise<string[]> {
  c.write(fe.query(sql));
  return (await c.untilReady(20_000)).map((f) =>
    f.code === BackendCode.ErrorResponse
      ? `E ${decodeErrorResponse(f.payload).code}`
      : String.fromCharCode(f.code),
  );
}

describe('prepared statements within the memory budget (budget 32 MiB, 1 MB statements)', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy(withBudget());
  });
  afterAll(() => proxy.close());
  const retained = () => proxy.server.stats().memory.retained;
  const login = async () => {
    const c = await RawClient.connect(proxy.port);
    await c.login({ user: 'alice', database: 'demo' }, 'alice');
    return c;
  };

  it('named Parses are kept up to the session share, then refused with 53200; Close, DEALLOCATE, DISCARD ALL give them back', async () => {
    expect(FITS).toBe(4);
    const c = await login();
    try {
      const answers: string[] = [];
      for (let i = 0; i < 12; i++) answers.push((await exchange(c, fe.parse(`big${i}`, TEXT))).join(' '));
      expect(answers).toEqual([
        ...Array.from({ length: FITS }, () => '1 Z'),
        ...Array.from({ length: 12 - FITS }, () => 'E 53200 Z'),
      ]);
      expect(retained()).toBe(FITS * COST);
      // The refusal says what and why, as Postgres's own out_of_memory does.
      c.write(Buffer.concat([fe.parse('big99', TEXT), fe.sync()]));
      const refusal = decodeErrorResponse(
        (await c.untilReady(20_000)).find((f) => f.code === BackendCode.ErrorResponse)?.payload ??
          Buffer.alloc(0),
      );
      expect(refusal).toMatchObject({ severity: 'ERROR', code: '53200', message: 'out of memory' });
      expect(refusal.detail).toBe(
        `prepared statement "big99" (${TEXT.length} characters) does not fit in what pgwarden keeps for prepared statements: this session keeps ${FITS * COST} bytes of at most 8388608, all sessions ${FITS * COST} of at most 16777216 (limits.memory_budget_bytes 33554432)`,
      );
      expect(refusal.hint).toBe('Close or DEALLOCATE prepared statements the session no longer needs.');
      // The session goes on: a kept statement runs, a refused one does not exist.
      expect(await exchange(c, fe.bind({ statement: 'big0' }), fe.execute())).toEqual(['2', 'D f', 'C', 'Z']);
      expect(await exchange(c, fe.bind({ statement: `big${FITS}` }), fe.execute())).toEqual(['E 26000', 'Z']);
      // Close gives one back, and another fits again.
      expect(await exchange(c, fe.close('S', 'big0'))).toEqual(['3', 'Z']);
      expect(retained()).toBe((FITS - 1) * COST);
      expect(await exchange(c, fe.parse('again', TEXT))).toEqual(['1', 'Z']);
      expect(retained()).toBe(FITS * COST);
      // DEALLOCATE drops a protocol-level statement too (one namespace in Postgres).
      expect(await simple(c, 'DEALLOCATE big1')).toEqual(['C', 'Z']);
      expect(retained()).toBe((FITS - 1) * COST);
      expect(await exchange(c, fe.bind({ statement: 'big1' }), fe.execute())).toEqual(['E 26000', 'Z']);
      expect(await simple(c, 'DISCARD ALL')).toEqual(['C', 'Z']);
      expect(retained()).toBe(0);
    } finally {
      c.end();
    }
  });

  it('SQL-level PREPAREs count too, and the session end gives everything back', async () => {
    const c = await login();
    const prepare = (i: number) => `PREPARE sql${i} AS ${TEXT}`;
    const answers: string[] = [];
    for (let i = 0; i < FITS + 2; i++) answers.push((await simple(c, prepare(i))).join(' '));
    expect(answers.slice(FITS)).toEqual(['E 53200 Z', 'E 53200 Z']);
    expect(answers.slice(0, FITS).every((a) => a === 'C Z')).toBe(true);
    expect(await simple(c, 'EXECUTE sql0')).toEqual(['T', 'D', 'C', 'Z']);
    expect(await simple(c, 'DEALLOCATE ALL')).toEqual(['C', 'Z']);
    expect(retained()).toBe(0);
    // Kept again, then the session ends without closing them.
    expect(await exchange(c, fe.parse('left', TEXT))).toEqual(['1', 'Z']);
    expect(await simple(c, prepare(0))).toEqual(['C', 'Z']);
    expect(retained()).toBeGreaterThan(2 * TEXT.length);
    c.end();
    const deadline = Date.now() + 10_000;
    while (retained() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(retained()).toBe(0);
  });

  it('an unnamed Parse replaces the unnamed statement; a Query drops it, as Postgres does', async () => {
    const c = await login();
    try {
      for (let i = 0; i < 3 * FITS; i++) expect(await exchange(c, fe.parse('', TEXT))).toEqual(['1', 'Z']);
      expect(retained()).toBe(COST);
      expect(await simple(c, 'SELECT 1')).toEqual(['T', 'D', 'C', 'Z']);
      expect(retained()).toBe(0);
      expect(await exchange(c, fe.bind({ statement: '' }), fe.execute())).toEqual(['E 26000', 'Z']);
    } finally {
      c.end();
    }
  });
});

describe('a client sending many large named Parses through `pgwarden serve` (budget 32 MiB)', () => {
  let served: Served | undefined;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-prepared-'));
    served = await serveProcess(withBudget(), path.join(dir, 'pgwarden.yaml'));
  });
  afterAll(async () => {
    if (served) await stopChild(served.child, served.exited);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('200 × 1 MB never closed: the resident size stays under the budget plus a constant', async () => {
    const pid = served?.child.pid as number;
    const c = await RawClient.connect(served?.port as number);
    try {
      await c.login({ user: 'alice', database: 'demo' }, 'alice');
      expect(await exchange(c, fe.parse('warm', 'SELECT 1'))).toEqual(['1', 'Z']);
      const before = rssOf(pid);
      let kept = 0;
      for (let i = 0; i < 200; i++) {
        if ((await exchange(c, fe.parse(`big${i}`, TEXT)))[0] === '1') kept++;
      }
      const after = rssOf(pid);
      console.log(
        `200 × 1 MB named Parses: ${kept} kept; RSS before ${Math.round(before / MiB)} MiB, after ${Math.round(after / MiB)} MiB`,
      );
      expect(kept).toBe(FITS);
      // Before the count, all 200 were kept (200 MB of text and more).
      expect(after - before).toBeLessThan(BUDGET + 64 * MiB);
    } finally {
      c.end();
    }
  });
});

// Drives random and mutated frontend messages of every kind through one pgwarden session, checking every reply.
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { decodeDataRow } from '../../src/wire/backend.js';
import { BackendCode, FrontendCode } from '../../src/wire/codes.js';
import { decodeErrorResponse } from '../../src/wire/error-fields.js';
import * as fe from '../../src/wire/frontend-encode.js';
import { startTestProxy, type TestProxy } from './proxy.js';
import { RawClient } from './raw-client.js';

/** Valid messages of every kind a logged-in client may send, to mutate (the canary user's own). */
const SEEDS: Buffer[] = [
  fe.query('select 1'),
  fe.query("select id, name from users where id = 1; select 'a'"),
  fe.query('begin'),
  fe.query('rollback'),
  fe.parse('s1', 'select $1::int + 1', [23]),
  fe.parse('', 'select id from users where id = $1'),
  fe.bind({
    portal: '',
    statement: 's1',
    paramFormats: [0],
    params: [Buffer.from('41')],
    resultFormats: [0],
  }),
  fe.bind({
    portal: 'p1',
    statement: '',
    paramFormats: [1],
    params: [Buffer.from([0, 0, 0, 1])],
    resultFormats: [1],
  }),
  fe.describe('S', 's1'),
  fe.describe('P', ''),
  fe.execute('', 0),
  fe.execute('p1', 1),
  fe.close('S', 's1'),
  fe.close('P', 'p1'),
  fe.flush(),
  fe.copyData(Buffer.from('1\tx\n')),
  fe.copyDone(),
  fe.copyFail('no'),
  // FunctionCall ('F'): Int32 function OID, then argument formats, arguments and result format.
  Buffer.from([0x46, 0, 0, 0, 14, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0]),
];

/** The type bytes a logged-in client may send without PostgreSQL closing the session. */
const KINDS = [
  FrontendCode.Query,
  FrontendCode.Parse,
  FrontendCode.Bind,
  FrontendCode.Describe,
  FrontendCode.Execute,
  FrontendCode.Close,
  FrontendCode.Flush,
  FrontendCode.CopyData,
  FrontendCode.CopyDone,
  FrontendCode.CopyFail,
  FrontendCode.FunctionCall,
];

/** A message with a consistent length word around `payload`. */
function frame(code: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head[0] = code;
  head.writeInt32BE(payload.length + 4, 1);
  return Buffer.concat([head, payload]);
}

/** A seed with byte edits (invalid UTF-8 included), truncated or extended; or random bytes of a random kind. */
const message: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...SEEDS),
      fc.array(fc.tuple(fc.nat(), fc.constantFrom(0, 0xff, 0xc3, 0x80, 1, 0x7f, 0x30)), { maxLength: 3 }),
      fc.nat(),
      fc.uint8Array({ maxLength: 6 }),
      fc.boolean(),
    )
    .map(([seed, edits, cut, tail, keepKind]) => {
      const payload = Buffer.from(seed.subarray(5));
      for (const [i, v] of edits) if (payload.length > 0) payload[i % payload.length] = v;
      const cutAt = cut % 4 === 0 ? cut % (payload.length + 1) : payload.length;
      const body = Buffer.concat([
        payload.subarray(0, cutAt),
        cut % 5 === 0 ? Buffer.from(tail) : Buffer.alloc(0),
      ]);
      return frame(keepKind ? (seed[0] as number) : (KINDS[cut % KINDS.length] as number), body);
    }),
  fc
    .tuple(fc.constantFrom(...KINDS), fc.uint8Array({ maxLength: 40 }))
    .map(([code, bytes]) => frame(code, Buffer.from(bytes))),
);

/** What a fuzz run saw: messages sent, error codes answered (count per SQLSTATE), the slowest batch. */
export interface WireFuzzReport {
  readonly messages: number;
  readonly batches: number;
  readonly codes: Record<string, number>;
  readonly slowestBatchMs: number;
}

/**
 * Sends `total` generated messages (seeded, so a failure replays) to a session logged in as
 * `user`, in batches of up to 8, each batch followed by Sync and a marker query; after each batch
 * the replies up to the marker's row are read. Throws on an XX000 or FATAL reply, a session that
 * closes, a batch answered in more than 10 s, or a canary session (another client, every 50
 * batches) that cannot run `select 1`.
 */
export async function runWireFuzz(
  port: number,
  login: { user: string; password: string; database: string },
  total: number,
  seed = 16,
): Promise<WireFuzzReport> {
  const messages = fc.sample(message, { numRuns: total, seed });
  const client = await RawClient.connect(port);
  await client.login({ user: login.user, database: login.database }, login.password);
  const canary = new pg.Client({
    connectionString: `postgres://${login.user}:${login.password}@127.0.0.1:${port}/${login.database}`,
  });
  await canary.connect();
  const codes: Record<string, number> = {};
  let batches = 0;
  let slowest = 0;
  let previous: Buffer[] = [];
  try {
    for (let i = 0; i < messages.length; ) {
      const n = 1 + (i % 8);
      const batch = messages.slice(i, i + n);
      i += n;
      const marker = `m${batches}`;
      const started = Date.now();
      client.write(
        Buffer.concat([...batch, fe.sync(), fe.query('rollback'), fe.query(`select '${marker}'`)]),
      );
      for (;;) {
        if (client.closed) throw new Error(`session closed after batch ${batches}: ${hexOf(batch)}`);
        const f = await client.next(10_000).catch((e: unknown) => {
          throw new Error(`${(e as Error).message} after batch ${batches}: ${hexOf(batch)}`);
        });
        if (f.code === BackendCode.ErrorResponse) {
          const e = decodeErrorResponse(f.payload);
          codes[e.code] = (codes[e.code] ?? 0) + 1;
          // A reply the relay attributed to the wrong statement shows as a refused result.
          if (
            e.code === 'XX000' ||
            e.severity === 'FATAL' ||
            e.message.startsWith('pgwarden refused the result')
          )
            throw new Error(
              `${e.severity} ${e.code} ${e.message} after ${hexOf(previous)} | ${hexOf(batch)}`,
            );
        } else if (f.code === BackendCode.DataRow) {
          const cell = decodeDataRow(f.payload)[0];
          if (cell?.toString() === marker) {
            await client.untilReady(10_000);
            break;
          }
        }
      }
      slowest = Math.max(slowest, Date.now() - started);
      previous = batch;
      batches++;
      if (batches % 50 === 0) await canary.query('select 1');
    }
    await canary.query('select 1');
  } finally {
    client.end();
    await canary.end().catch(() => {});
  }
  return { messages: messages.length, batches, codes, slowestBatchMs: slowest };
}

function hexOf(batch: Buffer[]): string {
  return batch.map((b) => b.toString('hex')).join(' ');
}

/**
 * A test file's suite: a proxy with the demo config, `messages` fuzzed messages through one
 * session as alice (seed `seed`), and the assertions: no XX000, no relay error in the log, and
 * (with `expectCodes`) 08P01 and 22021 among the answers.
 */
export function wireFuzzSuite(messages: number, seed: number, expectCodes: boolean): void {
  let proxy: TestProxy;
  const logLines: Record<string, unknown>[] = [];
  beforeAll(async () => {
    proxy = await startTestProxy(undefined, { logLines });
  });
  afterAll(async () => {
    await proxy.close();
  });
  describe('wire fuzz', () => {
    test(`${messages} random and mutated messages through one session (seed ${seed})`, async () => {
      const report = await runWireFuzz(
        proxy.port,
        { user: 'alice', password: 'alice', database: 'demo' },
        messages,
        seed,
      );
      expect(report.messages).toBe(messages);
      expect(report.codes.XX000).toBeUndefined();
      if (expectCodes) {
        // Malformed messages are answered 08P01 and invalid UTF-8 22021, at ERROR, and the session goes on.
        expect(report.codes['08P01']).toBeGreaterThan(0);
        expect(report.codes['22021']).toBeGreaterThan(0);
      }
      expect(logLines.filter((l) => l.event === 'relay-error')).toEqual([]);
    }, 900_000);
  });
}

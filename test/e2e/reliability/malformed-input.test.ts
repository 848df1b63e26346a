// Malformed frontend messages get the ERROR Postgres gives (08P01, 22021) and the session goes on, compared with a direct connection (issue 16 item 4).
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD } from '../../../src/embedded/demo.js';
import { decodeReadyForQuery } from '../../../src/wire/backend.js';
import { BackendCode } from '../../../src/wire/codes.js';
import { decodeErrorResponse } from '../../../src/wire/error-fields.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { RawClient } from '../../helpers/raw-client.js';

let proxy: TestProxy;
beforeAll(async () => {
  proxy = await startTestProxy();
});
afterAll(async () => {
  await proxy.close();
});

/** A typed message with a consistent length word. */
function msg(code: string, payload: Buffer | string): Buffer {
  const p = Buffer.isBuffer(payload) ? payload : Buffer.from(payload, 'binary');
  const head = Buffer.alloc(5);
  head[0] = code.charCodeAt(0);
  head.writeInt32BE(p.length + 4, 1);
  return Buffer.concat([head, p]);
}

/** What a connection answers to `bytes`: ErrorResponse (severity, code) and ReadyForQuery (status), in order. */
async function answers(c: RawClient, bytes: Buffer, readies: number): Promise<string[]> {
  c.write(bytes);
  const out: string[] = [];
  while (readies > 0) {
    const f = await c.next(5000);
    if (f.code === BackendCode.ErrorResponse) {
      const e = decodeErrorResponse(f.payload);
      out.push(`${e.severity} ${e.code}${e.code === '22021' ? ` ${e.message}` : ''}`);
    } else if (f.code === BackendCode.ReadyForQuery) {
      out.push(`Z ${decodeReadyForQuery(f.payload)}`);
      readies--;
    }
  }
  return out;
}

async function proxied(): Promise<RawClient> {
  const c = await RawClient.connect(proxy.port);
  await c.login({ user: 'dba', database: 'demo' }, 'dba');
  return c;
}

async function direct(): Promise<RawClient> {
  const c = await RawClient.connect(inject('pg').port);
  await c.login({ user: 'pgwarden_app', database: 'demo' }, DEMO_APP_PASSWORD);
  return c;
}

const badUtf8 = Buffer.concat([Buffer.from("select 'caf"), Buffer.from([0xc3, 0x28]), Buffer.from("'\0")]);

/** Each case: bytes to send and how many ReadyForQuery messages end the answer. */
const CASES: Record<string, [Buffer, number]> = {
  'Query without its NUL': [msg('Q', 'select 1'), 1],
  'Query with trailing bytes': [msg('Q', 'select 1\0xx'), 1],
  'Query that is not UTF-8': [msg('Q', badUtf8), 1],
  'Parse truncated, then Sync': [Buffer.concat([msg('P', 's\0select 1\0\0'), fe.sync()]), 1],
  'Parse with a bad query, then Bind and Sync': [
    Buffer.concat([
      msg('P', Buffer.concat([Buffer.from('\0'), badUtf8, Buffer.from([0, 0])])),
      fe.bind({ portal: '', statement: '' }),
      fe.sync(),
    ]),
    1,
  ],
  'Bind with a count overrunning the message': [
    Buffer.concat([fe.parse('', 'select 1'), msg('B', '\0\0\0\0\x00\x05'), fe.sync()]),
    1,
  ],
  'Execute truncated': [Buffer.concat([msg('E', '\0\0\0'), fe.sync()]), 1],
  'Describe with a bad target': [Buffer.concat([msg('D', 'X\0'), fe.sync()]), 1],
  'Close without a name': [Buffer.concat([msg('C', 'S'), fe.sync()]), 1],
  'Flush with a payload, then Sync': [Buffer.concat([msg('H', 'x'), fe.sync()]), 1],
  'Sync with a payload': [msg('S', 'x'), 1],
  'Query not UTF-8 inside a transaction block': [
    Buffer.concat([fe.query('begin'), msg('Q', badUtf8), fe.query('rollback')]),
    3,
  ],
};

describe('malformed messages are answered as PostgreSQL answers them, and the session goes on', () => {
  for (const [name, [bytes, readies]] of Object.entries(CASES)) {
    test(name, async () => {
      const [p, d] = await Promise.all([proxied(), direct()]);
      const [viaProxy, viaPostgres] = await Promise.all([
        answers(p, bytes, readies),
        answers(d, bytes, readies),
      ]);
      expect(viaProxy).toEqual(viaPostgres);
      expect(viaProxy.some((a) => a.startsWith('ERROR 08P01') || a.startsWith('ERROR 22021'))).toBe(true);
      // The session goes on.
      expect(await answers(p, fe.query('select 1'), 1)).toEqual(['Z I']);
      p.end();
      d.end();
    });
  }

  test('a query that is not UTF-8 gets Postgres’s message', async () => {
    const p = await proxied();
    expect(await answers(p, msg('Q', badUtf8), 1)).toEqual([
      'ERROR 22021 invalid byte sequence for encoding "UTF8": 0xc3 0x28',
      'Z I',
    ]);
    p.end();
  });
});

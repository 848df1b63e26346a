// MessageFramer: identical frames at every split point, zero-copy slicing, startup modes, bad lengths.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import * as be from '../../../src/wire/backend-encode.js';
import { FrontendCode } from '../../../src/wire/codes.js';
import { type Frame, MessageFramer } from '../../../src/wire/framer.js';
import { decodeStartupPacket } from '../../../src/wire/frontend.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import { expectProtocolError, hex } from './helpers.js';

const MAX = 1 << 20;

/** A realistic client stream: startup, simple query, an extended-protocol pipeline, COPY data, Terminate. */
function clientStream(): Buffer[] {
  return [
    fe.startupMessage(
      new Map([
        ['user', 'alice'],
        ['database', 'shop'],
        ['application_name', 'psql'],
        ['client_encoding', 'UTF8'],
      ]),
    ),
    fe.passwordMessage('sécret'),
    fe.query('SELECT id, email FROM customers WHERE id = 1; SELECT 2'),
    fe.parse('s1', 'SELECT * FROM orders WHERE customer_id = $1 AND total > $2', [23, 1700]),
    fe.bind({
      portal: 'p1',
      statement: 's1',
      paramFormats: [0],
      params: [Buffer.from('42'), null],
      resultFormats: [1],
    }),
    fe.describe('P', 'p1'),
    fe.execute('p1', 100),
    fe.sync(),
    fe.copyData(Buffer.alloc(300, 0x61)),
    fe.copyDone(),
    fe.flush(),
    fe.terminate(),
  ];
}

function framesOf(framer: MessageFramer, pieces: Buffer[]): Frame[] {
  return pieces.flatMap((p) => framer.push(p));
}

function simplify(frames: Frame[]): { code: number; bytes: string; payload: string }[] {
  return frames.map((f) => ({
    code: f.code,
    bytes: f.bytes.toString('hex'),
    payload: f.payload.toString('hex'),
  }));
}

const messages = clientStream();
const stream = Buffer.concat(messages);
const reference = simplify(framesOf(new MessageFramer({ maxMessageBytes: MAX, startup: true }), [stream]));

describe('MessageFramer on a realistic stream', () => {
  it('cuts the stream into the original messages', () => {
    expect(reference.map((f) => f.bytes)).toEqual(messages.map((m) => m.toString('hex')));
    expect(reference.map((f) => f.code)).toEqual([
      0,
      FrontendCode.Password,
      FrontendCode.Query,
      FrontendCode.Parse,
      FrontendCode.Bind,
      FrontendCode.Describe,
      FrontendCode.Execute,
      FrontendCode.Sync,
      FrontendCode.CopyData,
      FrontendCode.CopyDone,
      FrontendCode.Flush,
      FrontendCode.Terminate,
    ]);
    // Payload is the bytes after the header: 4 bytes untyped, 5 typed.
    expect(reference[0]?.payload).toBe(messages[0]?.subarray(4).toString('hex'));
    expect(reference[2]?.payload).toBe(messages[2]?.subarray(5).toString('hex'));
  });

  it('yields identical frames for every split into 2 pieces', () => {
    for (let i = 0; i <= stream.length; i++) {
      const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
      const got = framesOf(framer, [stream.subarray(0, i), stream.subarray(i)]);
      expect(simplify(got)).toEqual(reference);
      expect(framer.buffered).toBe(0);
    }
  });

  it('yields identical frames for every split into 3 pieces', () => {
    const want = JSON.stringify(reference);
    let checked = 0;
    for (let i = 0; i <= stream.length; i++) {
      for (let j = i; j <= stream.length; j++) {
        const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
        const got = framesOf(framer, [stream.subarray(0, i), stream.subarray(i, j), stream.subarray(j)]);
        // Compare serialized to keep ~100k comparisons fast; a mismatch is re-checked for a readable diff.
        const s = JSON.stringify(simplify(got));
        if (s !== want) expect([i, j, simplify(got)]).toEqual([i, j, reference]);
        checked++;
      }
    }
    expect(checked).toBe(((stream.length + 1) * (stream.length + 2)) / 2);
  });

  it('yields identical frames byte by byte, with frames appearing exactly when their last byte arrives', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
    const got: Frame[] = [];
    const ends = new Set<number>();
    let acc = 0;
    for (const m of messages) {
      acc += m.length;
      ends.add(acc);
    }
    for (let i = 0; i < stream.length; i++) {
      const out = framer.push(stream.subarray(i, i + 1));
      expect(out.length, `after byte ${i}`).toBe(ends.has(i + 1) ? 1 : 0);
      got.push(...out);
      expect(framer.buffered).toBe(
        ends.has(i + 1) ? 0 : i + 1 - Math.max(0, ...[...ends].filter((e) => e <= i)),
      );
    }
    expect(simplify(got)).toEqual(reference);
  });

  it('yields identical frames for arbitrary chunkings (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: stream.length }), { maxLength: 40 }), (cuts) => {
        const points = [0, ...[...cuts].sort((a, b) => a - b), stream.length];
        const pieces: Buffer[] = [];
        for (let k = 1; k < points.length; k++) {
          pieces.push(Buffer.from(stream.subarray(points[k - 1], points[k])));
        }
        const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
        expect(simplify(framesOf(framer, pieces))).toEqual(reference);
        expect(framer.buffered).toBe(0);
      }),
      { numRuns: 500 },
    );
  });

  it('frames a backend stream (typed from the first byte) under arbitrary chunking (property)', () => {
    const backend = [
      be.authenticationSASL(['SCRAM-SHA-256']),
      be.authenticationSASLContinue(Buffer.from('r=abc,s=c2FsdA==,i=4096')),
      be.authenticationSASLFinal(Buffer.from('v=xyz')),
      be.authenticationOk(),
      be.parameterStatus('server_version', '15.8'),
      be.backendKeyData(4242, -123456789),
      be.readyForQuery('I'),
      be.rowDescription([
        {
          name: 'id',
          tableOid: 16384,
          columnAttnum: 1,
          typeOid: 23,
          typeSize: 4,
          typeModifier: -1,
          format: 0,
        },
      ]),
      be.dataRow([Buffer.from('1')]),
      be.dataRow([null]),
      be.commandComplete('SELECT 2'),
      be.readyForQuery('T'),
    ];
    const bstream = Buffer.concat(backend);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: bstream.length }), { maxLength: 30 }), (cuts) => {
        const points = [0, ...[...cuts].sort((a, b) => a - b), bstream.length];
        const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
        const frames: Frame[] = [];
        for (let k = 1; k < points.length; k++)
          frames.push(...framer.push(bstream.subarray(points[k - 1], points[k])));
        expect(frames.map((f) => f.bytes.toString('hex'))).toEqual(backend.map((m) => m.toString('hex')));
      }),
      { numRuns: 300 },
    );
  });
});

describe('MessageFramer memory behaviour', () => {
  it('slices frames lying in one chunk without copying', () => {
    const chunk = Buffer.concat([fe.query('SELECT 1'), fe.sync()]);
    const frames = new MessageFramer({ maxMessageBytes: MAX, startup: false }).push(chunk);
    expect(frames).toHaveLength(2);
    for (const f of frames) {
      expect(f.bytes.buffer).toBe(chunk.buffer);
      expect(f.payload.buffer).toBe(chunk.buffer);
    }
    expect(frames[1]?.bytes.byteOffset).toBe(chunk.byteOffset + fe.query('SELECT 1').length);
  });

  it('copies a frame spanning chunks once, into its own buffer', () => {
    const msg = fe.query('SELECT 1');
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    expect(framer.push(msg.subarray(0, 3))).toEqual([]);
    expect(framer.buffered).toBe(3);
    const [f] = framer.push(msg.subarray(3));
    expect(f?.bytes.equals(msg)).toBe(true);
    expect(f?.bytes.length).toBe(msg.length);
    expect(framer.buffered).toBe(0);
  });

  it('frames a large message sent in many small chunks in linear time', () => {
    const big = fe.copyData(Buffer.alloc(2_000_000, 7));
    const framer = new MessageFramer({ maxMessageBytes: 4_000_000, startup: false });
    const started = performance.now();
    const frames: Frame[] = [];
    for (let i = 0; i < big.length; i += 16) frames.push(...framer.push(big.subarray(i, i + 16)));
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(frames).toHaveLength(1);
    expect(frames[0]?.bytes.equals(big)).toBe(true);
  });

  it('ignores empty chunks', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    expect(framer.push(Buffer.alloc(0))).toEqual([]);
    expect(framer.push(fe.sync()).map((f) => f.code)).toEqual([FrontendCode.Sync]);
    expect(framer.push(Buffer.alloc(0))).toEqual([]);
  });

  it('frames a zero-payload message as soon as its 5 header bytes arrive', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    const [f] = framer.push(hex('53 00000004'));
    expect(f?.code).toBe(0x53);
    expect(f?.payload.length).toBe(0);
  });
});

describe('MessageFramer startup phase', () => {
  it('switches to typed mode after a StartupMessage', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
    expect(framer.inStartup).toBe(true);
    const frames = framer.push(Buffer.concat([fe.startupMessage(new Map([['user', 'u']])), fe.query('x')]));
    expect(frames.map((f) => f.code)).toEqual([0, FrontendCode.Query]);
    expect(framer.inStartup).toBe(false);
  });

  it('stays in startup mode after SSLRequest and holds back bytes behind it (CVE-2021-23214)', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
    const startup = fe.startupMessage(new Map([['user', 'mallory']]));
    const frames = framer.push(Buffer.concat([fe.sslRequest(), startup]));
    expect(frames).toHaveLength(1);
    expect(decodeStartupPacket(frames[0]!.payload)).toEqual({ kind: 'ssl' });
    expect(framer.inStartup).toBe(true);
    expect(framer.buffered).toBe(startup.length);
    // After answering 'N' the session calls expectStartup(); the held bytes are then an untyped startup.
    framer.expectStartup();
    const next = framer.push(Buffer.alloc(0));
    expect(next.map((f) => f.bytes.toString('hex'))).toEqual([startup.toString('hex')]);
    expect(framer.inStartup).toBe(false);
  });

  it('stays in startup mode after GSSENCRequest, then accepts an SSLRequest and a StartupMessage', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
    expect(decodeStartupPacket(framer.push(fe.gssencRequest())[0]!.payload)).toEqual({ kind: 'gssenc' });
    expect(decodeStartupPacket(framer.push(fe.sslRequest())[0]!.payload)).toEqual({ kind: 'ssl' });
    const s = framer.push(fe.startupMessage(new Map([['user', 'u']])));
    expect(s).toHaveLength(1);
    expect(s[0]?.code).toBe(0);
    expect(framer.inStartup).toBe(false);
  });

  it('expectStartup() makes the next message untyped again', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    framer.expectStartup();
    const [f] = framer.push(fe.cancelRequest(7, 9));
    expect(f?.code).toBe(0);
    expect(decodeStartupPacket(f!.payload)).toEqual({ kind: 'cancel', processId: 7, secretKey: 9 });
  });
});

describe('MessageFramer length errors', () => {
  it('rejects a typed length below 4 with 08P01', () => {
    for (const len of ['00000000', '00000003', 'ffffffff', '80000000']) {
      const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
      expectProtocolError(() => framer.push(hex(`51 ${len}`)), '08P01');
    }
  });

  it('rejects a startup length below 8 with 08P01', () => {
    for (const len of ['00000000', '00000004', '00000007', 'ffffffff']) {
      const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
      expectProtocolError(() => framer.push(hex(`${len} 00030000`)), '08P01');
    }
  });

  it('rejects an oversize typed message with 54000 as soon as its header arrives', () => {
    const framer = new MessageFramer({ maxMessageBytes: 100, startup: false });
    // Length 100 + type byte = 101 bytes whole: one over the limit. Only the header is sent.
    const err = expectProtocolError(() => framer.push(hex('51 00000064')), '54000');
    expect(err.message).toMatch(/101 bytes/);
  });

  it('accepts a typed message of exactly maxMessageBytes', () => {
    const msg = fe.copyData(Buffer.alloc(95));
    expect(msg.length).toBe(100);
    const framer = new MessageFramer({ maxMessageBytes: 100, startup: false });
    expect(framer.push(msg)).toHaveLength(1);
  });

  it('rejects a startup packet over 10000 bytes (Postgres MAX_STARTUP_PACKET_LENGTH) with 08P01', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: true });
    expectProtocolError(() => framer.push(hex('00002711')), '08P01');
    const ok = new MessageFramer({ maxMessageBytes: MAX, startup: true });
    expect(ok.push(hex('00002710'))).toEqual([]);
  });

  it('honours maxStartupBytes and a smaller maxMessageBytes for startup packets', () => {
    expectProtocolError(
      () =>
        new MessageFramer({ maxMessageBytes: MAX, startup: true, maxStartupBytes: 16 }).push(hex('00000011')),
      '08P01',
    );
    expectProtocolError(
      () => new MessageFramer({ maxMessageBytes: 12, startup: true }).push(hex('0000000d')),
      '08P01',
    );
  });

  it('rejects a typed message with type byte 0, so code 0 always means an untyped packet', () => {
    expectProtocolError(() =>
      new MessageFramer({ maxMessageBytes: MAX, startup: false }).push(hex('00 00000004')),
    );
  });

  it('stays poisoned after an error and drops its buffer', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    const first = expectProtocolError(() => framer.push(hex('51 00000001')));
    expect(framer.buffered).toBe(0);
    let again: unknown;
    try {
      framer.push(fe.sync());
    } catch (err) {
      again = err;
    }
    expect(again).toBe(first);
  });

  it('throws on a bad length that follows valid messages in the same chunk', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    expectProtocolError(() => framer.push(Buffer.concat([fe.sync(), hex('51 00000002')])), '08P01');
  });
});

describe('MessageFramer runs of one message type (takeRun)', () => {
  const rows = [
    be.dataRow([Buffer.from('1'), Buffer.from('alice')]),
    be.dataRow([Buffer.from('2'), null]),
    be.dataRow([Buffer.from('3'), Buffer.from('carol')]),
  ];
  const tail = [be.commandComplete('SELECT 3'), be.readyForQuery('I')];
  const D = 0x44;

  /** Feeds `pieces` and takes runs of DataRows where they come, frames otherwise: the bytes in order, and what each was. */
  function consume(pieces: Buffer[], max = MAX): { kinds: string[]; bytes: Buffer } {
    const framer = new MessageFramer({ maxMessageBytes: max, startup: false });
    const kinds: string[] = [];
    const out: Buffer[] = [];
    for (const p of pieces) {
      framer.feed(p);
      for (;;) {
        const run = framer.takeRun(D, 1024);
        if (run) {
          kinds.push(`run:${run.length}`);
          out.push(run);
          continue;
        }
        const f = framer.shift();
        if (!f) break;
        kinds.push(String.fromCharCode(f.code));
        out.push(f.bytes);
      }
    }
    expect(framer.buffered).toBe(0);
    return { kinds, bytes: Buffer.concat(out) };
  }

  it('takes every whole row of one chunk as one view of it, then frames the rest', () => {
    const chunk = Buffer.concat([...rows, ...tail]);
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    framer.feed(chunk);
    const run = framer.takeRun(D, 1024);
    const rowBytes = rows.reduce((n, r) => n + r.length, 0);
    expect(run?.length).toBe(rowBytes);
    expect(run?.buffer).toBe(chunk.buffer);
    expect(run?.byteOffset).toBe(chunk.byteOffset);
    expect(framer.cutCount).toBe(3);
    expect(framer.takeRun(D)).toBeUndefined();
    expect(framer.shift()?.code).toBe(0x43);
    expect(framer.shift()?.code).toBe(0x5a);
    expect(framer.shift()).toBeUndefined();
    expect(framer.cutCount).toBe(5);
  });

  it('yields the same bytes in the same order at every split of the stream', () => {
    const stream = Buffer.concat([be.rowDescription([]), ...rows, ...tail]);
    for (let i = 0; i <= stream.length; i++) {
      const r = consume([stream.subarray(0, i), stream.subarray(i)]);
      expect(r.bytes.equals(stream)).toBe(true);
      expect(r.kinds.at(-1)).toBe('Z');
    }
  });

  it('passes a row split across chunks on in parts, from its whole header on', () => {
    const framer = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    const r0 = rows[0] as Buffer;
    const r1 = rows[1] as Buffer;
    framer.feed(r0.subarray(0, 7));
    expect(framer.takeRun(D, 1)).toBeUndefined();
    expect(framer.takeRun(D, 1024)?.equals(r0.subarray(0, 7))).toBe(true);
    expect(framer.continuing).toBe(true);
    expect(framer.pendingMessageBytes).toBe(0);
    expect(framer.takeRun(D)).toBeUndefined();
    framer.feed(r0.subarray(7, 9));
    expect(framer.takeRun(0x43)?.equals(r0.subarray(7, 9))).toBe(true);
    framer.feed(Buffer.concat([r0.subarray(9), r1, be.readyForQuery('I')]));
    expect(() => framer.shift()).toThrow(/takeRun/);
    expect(framer.takeRun(D)?.equals(r0.subarray(9))).toBe(true);
    expect(framer.continuing).toBe(false);
    expect(framer.takeRun(D)?.equals(r1)).toBe(true);
    expect(framer.shift()?.code).toBe(0x5a);
    expect(framer.cutCount).toBe(3);
    expect(framer.buffered).toBe(0);
  });

  it('leaves a row whose header is split across chunks, a malformed length and an oversize row to shift()', () => {
    const r0 = rows[0] as Buffer;
    const split = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    split.feed(r0.subarray(0, 3));
    split.feed(r0.subarray(3));
    expect(split.takeRun(D)).toBeUndefined();
    expect(split.shift()?.bytes.equals(r0)).toBe(true);

    const bad = new MessageFramer({ maxMessageBytes: MAX, startup: false });
    bad.feed(Buffer.concat([r0, hex('44 00000002')]));
    expect(bad.takeRun(D)?.equals(r0)).toBe(true);
    expect(bad.takeRun(D)).toBeUndefined();
    expectProtocolError(() => bad.shift(), '08P01');
    expectProtocolError(() => bad.feed(r0), '08P01');

    const small = new MessageFramer({ maxMessageBytes: r0.length - 1, startup: false });
    small.feed(r0);
    expect(small.takeRun(D)).toBeUndefined();
    expectProtocolError(() => small.shift(), '54000');
  });
});

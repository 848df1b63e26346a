// Fields checked where they lie: the same verdicts as the decoders, on valid, truncated and mutated messages.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBindNames } from '../../../src/wire/frontend.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import { asciiCString, asciiCStringEnd, bindWellFormed } from '../../../src/wire/in-place.js';

describe('asciiCString', () => {
  it('reads an ASCII string that ends with its only NUL', () => {
    const b = Buffer.from('xxSELECT 1\0yy', 'latin1');
    expect(asciiCString(b, 2, 11)).toBe('SELECT 1');
    expect(asciiCString(b, 2, 3)).toBeUndefined();
    expect(asciiCString(Buffer.from('\0'), 0, 1)).toBe('');
  });

  it('leaves to the decoder a missing NUL, an inner NUL and any byte of 0x80 or more', () => {
    expect(asciiCString(Buffer.from('abc'), 0, 3)).toBeUndefined();
    expect(asciiCString(Buffer.from('a\0c\0', 'latin1'), 0, 4)).toBeUndefined();
    expect(asciiCString(Buffer.from('é\0'), 0, Buffer.byteLength('é\0'))).toBeUndefined();
    expect(asciiCString(Buffer.from([0x41, 0xff, 0]), 0, 3)).toBeUndefined();
    expect(asciiCString(Buffer.alloc(0), 0, 0)).toBeUndefined();
  });
});

describe('asciiCStringEnd', () => {
  it('is the offset after the NUL, or -1 past the end or at a non-ASCII byte', () => {
    const b = Buffer.from('P0_1\0rest', 'latin1');
    expect(asciiCStringEnd(b, 0, b.length)).toBe(5);
    expect(asciiCStringEnd(b, 4, b.length)).toBe(5);
    expect(asciiCStringEnd(b, 0, 4)).toBe(-1);
    expect(asciiCStringEnd(Buffer.from([0x41, 0x80, 0]), 0, 3)).toBe(-1);
  });
});

/** decodeBindNames's verdict on a whole Bind message (true: it decodes). */
function decodes(msg: Buffer): boolean {
  try {
    decodeBindNames(msg.subarray(5));
    return true;
  } catch {
    return false;
  }
}

/** bindWellFormed's verdict on a whole Bind message with ASCII names (false when the names are not). */
function wellFormed(msg: Buffer): boolean {
  const portalEnd = asciiCStringEnd(msg, 5, msg.length);
  if (portalEnd < 0) return false;
  const namesEnd = asciiCStringEnd(msg, portalEnd, msg.length);
  return namesEnd >= 0 && bindWellFormed(msg, namesEnd, msg.length);
}

describe('bindWellFormed', () => {
  it('accepts the Binds pgbench and drivers send (text and binary, NULL parameters, result formats)', () => {
    const binds = [
      fe.bind({ params: [Buffer.from('42')] }),
      fe.bind({ statement: 'P0_1', params: [Buffer.from('7')] }),
      fe.bind({ portal: 'c1', statement: 's', params: [null, Buffer.alloc(0), Buffer.from('x')] }),
      fe.bind({ params: [Buffer.from([0, 0, 0, 1])], paramFormats: [1], resultFormats: [1] }),
      fe.bind({
        params: [Buffer.from('a'), Buffer.from('b')],
        paramFormats: [0, 1],
        resultFormats: [0, 1, 0],
      }),
    ];
    for (const b of binds) {
      expect(decodes(b)).toBe(true);
      expect(wellFormed(b)).toBe(true);
    }
  });

  it('refuses a truncated Bind, trailing bytes, a bad format code and a format count that fits no parameter count', () => {
    const b = fe.bind({ params: [Buffer.from('42')] });
    for (let cut = 6; cut < b.length; cut++) expect(wellFormed(b.subarray(0, cut))).toBe(false);
    expect(wellFormed(Buffer.concat([b, Buffer.from([0])]))).toBe(false);
    expect(wellFormed(fe.bind({ params: [Buffer.from('1')], paramFormats: [2] }))).toBe(false);
    expect(
      wellFormed(
        fe.bind({ params: [Buffer.from('1'), Buffer.from('2'), Buffer.from('3')], paramFormats: [0, 1] }),
      ),
    ).toBe(false);
  });

  it('agrees with decodeBindNames on every byte changed in valid Binds (ASCII names)', () => {
    const param = fc.option(
      fc.uint8Array({ maxLength: 6 }).map((a) => Buffer.from(a)),
      { nil: null },
    );
    const bindArb = fc
      .record({
        portal: fc.constantFrom('', 'p'),
        statement: fc.constantFrom('', 'P0_1'),
        params: fc.array(param, { maxLength: 3 }),
        binary: fc.boolean(),
        results: fc.array(fc.constantFrom(0, 1), { maxLength: 2 }),
      })
      .map((r) =>
        fe.bind({
          portal: r.portal,
          statement: r.statement,
          params: r.params,
          ...(r.binary ? { paramFormats: [1] } : {}),
          resultFormats: r.results,
        }),
      );
    fc.assert(
      fc.property(bindArb, fc.nat(), fc.integer({ min: 0, max: 255 }), (msg, at, byte) => {
        const m = Buffer.from(msg);
        const i = 5 + (at % Math.max(1, m.length - 5));
        if (i < m.length) m[i] = byte;
        // Names that are not ASCII any more are left to the decoder: only a "no" is asked of them.
        const ascii = asciiCStringEnd(m, 5, m.length) >= 0;
        if (wellFormed(m)) expect(decodes(m)).toBe(true);
        else if (ascii && asciiCStringEnd(m, asciiCStringEnd(m, 5, m.length), m.length) >= 0)
          expect(decodes(m)).toBe(false);
      }),
      { numRuns: 5000 },
    );
  });
});

// Property tests: random bytes only ever raise ProtocolError; random valid values survive encode → decode.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MessageFramer } from '../../../src/wire/framer.js';
import * as fd from '../../../src/wire/frontend.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import * as be from '../../../src/wire/index.js';
import { ProtocolError } from '../../../src/wire/protocol-error.js';
import { onlyProtocolErrors, typedPayload as tp, untypedPayload as up } from './helpers.js';

const decoders: Record<string, (p: Buffer) => unknown> = {
  decodeStartupPacket: fd.decodeStartupPacket,
  decodeQuery: fd.decodeQuery,
  decodeParse: fd.decodeParse,
  decodeBind: fd.decodeBind,
  decodeBindNames: fd.decodeBindNames,
  decodeDescribe: fd.decodeDescribe,
  decodeExecute: fd.decodeExecute,
  decodeClose: fd.decodeClose,
  decodeSASLInitialResponse: fd.decodeSASLInitialResponse,
  decodeSASLResponse: fd.decodeSASLResponse,
  decodePassword: fd.decodePassword,
  decodeCopyFail: fd.decodeCopyFail,
  decodeRowDescription: be.decodeRowDescription,
  decodeDataRow: be.decodeDataRow,
  decodeErrorResponse: be.decodeErrorResponse,
  decodeReadyForQuery: be.decodeReadyForQuery,
  decodeAuthentication: be.decodeAuthentication,
  decodeBackendKeyData: be.decodeBackendKeyData,
  decodeParameterStatus: be.decodeParameterStatus,
  decodeCommandComplete: be.decodeCommandComplete,
  decodeParameterDescription: be.decodeParameterDescription,
  decodeNegotiateProtocolVersion: be.decodeNegotiateProtocolVersion,
  decodeNotificationResponse: be.decodeNotificationResponse,
};

/** Valid payloads to mutate, per decoder, so fuzzing also reaches the deep branches. */
const seeds: Record<string, Buffer[]> = {
  decodeStartupPacket: [
    up(
      fe.startupMessage(
        new Map([
          ['user', 'a'],
          ['database', 'b'],
        ]),
      ),
    ),
    up(fe.cancelRequest(1, 2)),
    up(fe.sslRequest()),
  ],
  decodeQuery: [tp(fe.query('SELECT 1'))],
  decodeParse: [tp(fe.parse('s', 'SELECT $1, $2', [23, 25]))],
  decodeBind: [
    tp(
      fe.bind({
        portal: 'p',
        statement: 's',
        paramFormats: [0, 1],
        params: [Buffer.from('1'), null],
        resultFormats: [1],
      }),
    ),
  ],
  decodeDescribe: [tp(fe.describe('S', 'x'))],
  decodeExecute: [tp(fe.execute('p', 10))],
  decodeClose: [tp(fe.close('P', 'x'))],
  decodeSASLInitialResponse: [tp(fe.saslInitialResponse('SCRAM-SHA-256', Buffer.from('n,,n=,r=x')))],
  decodeSASLResponse: [tp(fe.saslResponse(Buffer.from('c=biws')))],
  decodePassword: [tp(fe.passwordMessage('pw'))],
  decodeCopyFail: [tp(fe.copyFail('no'))],
  decodeRowDescription: [
    tp(
      be.rowDescription([
        { name: 'a', tableOid: 1, columnAttnum: 1, typeOid: 23, typeSize: 4, typeModifier: -1, format: 0 },
      ]),
    ),
  ],
  decodeDataRow: [tp(be.dataRow([Buffer.from('x'), null]))],
  decodeErrorResponse: [
    tp(be.errorResponse({ severity: 'ERROR', code: '22012', message: 'division by zero', position: 8 })),
  ],
  decodeReadyForQuery: [tp(be.readyForQuery('I'))],
  decodeAuthentication: [
    tp(be.authenticationSASL(['SCRAM-SHA-256'])),
    tp(be.authenticationMD5Password(Buffer.alloc(4))),
  ],
  decodeBackendKeyData: [tp(be.backendKeyData(1, 2))],
  decodeParameterStatus: [tp(be.parameterStatus('a', 'b'))],
  decodeCommandComplete: [tp(be.commandComplete('SELECT 1'))],
  decodeParameterDescription: [tp(be.parameterDescription([23]))],
  decodeNegotiateProtocolVersion: [tp(be.negotiateProtocolVersion(0, ['_pq_.a']))],
  decodeNotificationResponse: [Buffer.from('\0\0\0\x01ch\0pl\0')],
};
// decodeBindNames reads the same messages as decodeBind.
seeds.decodeBindNames = seeds.decodeBind ?? [];

/** A seed with random byte edits: overwrite, truncate, extend. */
function mutated(seedList: Buffer[]): fc.Arbitrary<Buffer> {
  return fc
    .tuple(
      fc.constantFrom(...seedList),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
      fc.nat(),
      fc.uint8Array({ maxLength: 8 }),
    )
    .map(([seed, edits, cut, tail]) => {
      const b = Buffer.from(seed);
      for (const [i, v] of edits) if (b.length > 0) b[i % b.length] = v;
      return Buffer.concat([
        b.subarray(0, cut % (b.length + 1)),
        cut % 3 === 0 ? Buffer.from(tail) : Buffer.alloc(0),
      ]);
    });
}

describe('decoders never throw anything but ProtocolError', () => {
  for (const [name, decode] of Object.entries(decoders)) {
    it(`${name}: random bytes`, () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) =>
          onlyProtocolErrors(() => decode(Buffer.from(bytes))),
        ),
        { numRuns: 1000 },
      );
    });
    it(`${name}: mutated valid payloads`, () => {
      fc.assert(
        fc.property(mutated(seeds[name]!), (bytes) => onlyProtocolErrors(() => decode(bytes))),
        { numRuns: 1000 },
      );
    });
  }

  it('every decoder rejects every strict prefix of a valid payload that it would otherwise accept', () => {
    for (const [name, list] of Object.entries(seeds)) {
      const decode = decoders[name]!;
      for (const seed of list) {
        decode(seed);
        if (name === 'decodeSASLResponse' || name === 'decodeAuthentication') continue; // open-ended payloads
        for (let n = 0; n < seed.length; n++) {
          expect(() => decode(seed.subarray(0, n)), `${name} prefix ${n}`).toThrow(ProtocolError);
        }
      }
    }
  });
});

describe('framer never throws anything but ProtocolError', () => {
  it('on random streams in random chunks, startup and typed', () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(fc.uint8Array({ maxLength: 40 }), { maxLength: 10 }),
        (startup, chunks) => {
          const framer = new MessageFramer({ maxMessageBytes: 64, startup });
          onlyProtocolErrors(() => {
            let total = 0;
            let framed = 0;
            for (const c of chunks) {
              total += c.length;
              for (const f of framer.push(Buffer.from(c))) {
                framed += f.bytes.length;
                expect(f.bytes.length).toBeLessThanOrEqual(64);
                expect(f.payload.length).toBe(f.bytes.length - (f.code === 0 ? 4 : 5));
              }
              expect(framed + framer.buffered).toBe(total);
            }
          });
        },
      ),
      { numRuns: 2000 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Encode → decode round trips over arbitrary values.

/** Strings without NUL (the wire format cannot carry it), including astral characters. */
const wireString = fc.string({ unit: 'grapheme', maxLength: 20 }).filter((s) => !s.includes('\0'));
const cell = fc.option(
  fc.uint8Array({ maxLength: 20 }).map((a) => Buffer.from(a)),
  { nil: null },
);
const uint32 = fc.integer({ min: 0, max: 0xffffffff });
const int32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const int16 = fc.integer({ min: -0x8000, max: 0x7fff });
const format = fc.constantFrom(0, 1);

describe('encode → decode round trips (property)', () => {
  it('StartupMessage', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.tuple(
            wireString.filter((s) => s !== ''),
            wireString,
          ),
          { selector: ([k]) => k, maxLength: 8 },
        ),
        fc.integer({ min: 0, max: 0xffff }),
        (pairs, minor) => {
          const params = new Map(pairs);
          expect(fd.decodeStartupPacket(up(fe.startupMessage(params, minor)))).toEqual({
            kind: 'startup',
            major: 3,
            minor,
            params,
          });
        },
      ),
    );
  });

  it('CancelRequest', () => {
    fc.assert(
      fc.property(int32, int32, (processId, secretKey) => {
        expect(fd.decodeStartupPacket(up(fe.cancelRequest(processId, secretKey)))).toEqual({
          kind: 'cancel',
          processId,
          secretKey,
        });
      }),
    );
  });

  it('Query, Parse, Describe, Close, Execute, Password, CopyFail', () => {
    fc.assert(
      fc.property(wireString, wireString, fc.array(uint32, { maxLength: 10 }), int32, (a, b, types, rows) => {
        expect(fd.decodeQuery(tp(fe.query(a)))).toEqual({ sql: a });
        expect(fd.decodeParse(tp(fe.parse(a, b, types)))).toEqual({ name: a, sql: b, paramTypes: types });
        expect(fd.decodeDescribe(tp(fe.describe('S', a)))).toEqual({ target: 'S', name: a });
        expect(fd.decodeClose(tp(fe.close('P', b)))).toEqual({ target: 'P', name: b });
        expect(fd.decodeExecute(tp(fe.execute(a, rows)))).toEqual({ portal: a, maxRows: rows });
        expect(fd.decodePassword(tp(fe.passwordMessage(a)))).toBe(a);
        expect(fd.decodeCopyFail(tp(fe.copyFail(b)))).toBe(b);
      }),
    );
  });

  it('Bind', () => {
    fc.assert(
      fc.property(
        wireString,
        wireString,
        fc.array(cell, { maxLength: 8 }),
        fc.integer({ min: 0, max: 2 }),
        fc.array(format, { maxLength: 8 }),
        fc.array(format, { maxLength: 8 }),
        (portal, statement, params, formatMode, formats, resultFormats) => {
          // Valid format counts: none, one for all, or one per parameter.
          const paramFormats =
            formatMode === 0
              ? []
              : formatMode === 1
                ? formats.slice(0, 1)
                : params.map((_, i) => formats[i] ?? 0);
          if (formatMode === 1 && paramFormats.length === 0) paramFormats.push(1);
          const v = { portal, statement, paramFormats, params, resultFormats };
          expect(fd.decodeBind(tp(fe.bind(v)))).toEqual(v);
        },
      ),
    );
  });

  it('SASLInitialResponse', () => {
    fc.assert(
      fc.property(wireString, fc.uint8Array({ maxLength: 40 }), (mechanism, data) => {
        expect(
          fd.decodeSASLInitialResponse(tp(fe.saslInitialResponse(mechanism, Buffer.from(data)))),
        ).toEqual({
          mechanism,
          data: Buffer.from(data),
        });
      }),
    );
  });

  it('RowDescription and DataRow', () => {
    const field = fc.record({
      name: wireString,
      tableOid: uint32,
      columnAttnum: int16,
      typeOid: uint32,
      typeSize: int16,
      typeModifier: int32,
      format,
    });
    fc.assert(
      fc.property(fc.array(field, { maxLength: 10 }), fc.array(cell, { maxLength: 10 }), (fields, cells) => {
        expect(be.decodeRowDescription(tp(be.rowDescription(fields)))).toEqual(fields);
        expect(be.decodeDataRow(tp(be.dataRow(cells)))).toEqual(cells);
      }),
    );
  });

  it('ErrorResponse', () => {
    const severity = fc.constantFrom<be.Severity>(
      'ERROR',
      'FATAL',
      'PANIC',
      'WARNING',
      'NOTICE',
      'DEBUG',
      'INFO',
      'LOG',
    );
    const opt = fc.option(wireString, { nil: undefined });
    const pos = fc.option(fc.integer({ min: 0, max: 1_000_000 }), { nil: undefined });
    const unknownCode = fc.constantFrom('Z', 'x', 'y', '!');
    const arb = fc.record(
      {
        severity,
        code: fc.stringMatching(/^[0-9A-Z]{5}$/),
        message: wireString,
        detail: opt,
        hint: opt,
        position: pos,
        internalPosition: pos,
        internalQuery: opt,
        where: opt,
        schema: opt,
        table: opt,
        column: opt,
        dataType: opt,
        constraint: opt,
        file: opt,
        line: opt,
        routine: opt,
        unknownFields: fc.option(
          fc
            .uniqueArray(fc.tuple(unknownCode, wireString), { selector: ([k]) => k, minLength: 1 })
            .map((a) => new Map(a)),
          { nil: undefined },
        ),
      },
      { requiredKeys: ['severity', 'code', 'message'] },
    );
    fc.assert(
      fc.property(arb, (f) => {
        const clean = Object.fromEntries(
          Object.entries(f).filter(([, v]) => v !== undefined),
        ) as unknown as be.ErrorFields;
        expect(be.decodeErrorResponse(tp(be.errorResponse(clean)))).toEqual(clean);
        expect(be.decodeErrorResponse(tp(be.noticeResponse(clean)))).toEqual(clean);
      }),
    );
  });

  it('Authentication, ParameterStatus, BackendKeyData, CommandComplete', () => {
    fc.assert(
      fc.property(
        fc.array(
          wireString.filter((s) => s !== ''),
          { minLength: 1, maxLength: 4 },
        ),
        fc.uint8Array({ maxLength: 40 }),
        wireString,
        wireString,
        int32,
        int32,
        (mechs, data, a, b, pid, key) => {
          expect(be.decodeAuthentication(tp(be.authenticationSASL(mechs)))).toEqual({
            type: 'sasl',
            mechanisms: mechs,
          });
          expect(be.decodeAuthentication(tp(be.authenticationSASLContinue(Buffer.from(data))))).toEqual({
            type: 'sasl-continue',
            data: Buffer.from(data),
          });
          expect(be.decodeParameterStatus(tp(be.parameterStatus(a, b)))).toEqual({ name: a, value: b });
          expect(be.decodeBackendKeyData(tp(be.backendKeyData(pid, key)))).toEqual({
            processId: pid,
            secretKey: key,
          });
          expect(be.decodeCommandComplete(tp(be.commandComplete(a)))).toBe(a);
        },
      ),
    );
  });
});

describe('decodeBindNames checks a Bind exactly as decodeBind does', () => {
  const seed = tp(
    fe.bind({
      portal: 'p',
      statement: 's',
      paramFormats: [0, 1],
      params: [Buffer.from('1'), null],
      resultFormats: [1],
    }),
  );
  /** The outcome of a decoder: its names, or the error it raised (SQLSTATE and message). */
  const outcome = (f: () => { portal: string; statement: string }) => {
    try {
      const { portal, statement } = f();
      return { portal, statement };
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      return { sqlstate: e.sqlstate, message: e.message };
    }
  };
  it('the same names or the same ProtocolError for mutated and random payloads', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a)),
          fc
            .tuple(fc.nat(seed.length - 1), fc.integer({ min: 0, max: 255 }), fc.nat(seed.length))
            .map(([at, v, cut]) => {
              const b = Buffer.from(seed);
              b[at] = v;
              return b.subarray(0, cut);
            }),
        ),
        (payload) => {
          expect(outcome(() => fd.decodeBindNames(payload))).toEqual(outcome(() => fd.decodeBind(payload)));
        },
      ),
      { numRuns: 3000 },
    );
  });
});

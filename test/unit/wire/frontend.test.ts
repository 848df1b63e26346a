// Frontend decoders: round trips with our encoders and pg-protocol's serializer, exact bytes, malformed input.
import { serialize } from 'pg-protocol';
import { describe, expect, it } from 'vitest';
import {
  decodeBind,
  decodeClose,
  decodeCopyFail,
  decodeDescribe,
  decodeEmpty,
  decodeExecute,
  decodeParse,
  decodePassword,
  decodeQuery,
  decodeSASLInitialResponse,
  decodeSASLResponse,
  decodeStartupPacket,
} from '../../../src/wire/frontend.js';
import * as fe from '../../../src/wire/frontend-encode.js';
import { expectProtocolError, hex, typedPayload as tp, untypedPayload as up } from './helpers.js';

describe('decodeStartupPacket', () => {
  it('decodes SSLRequest, GSSENCRequest and CancelRequest from their known bytes', () => {
    expect(fe.sslRequest()).toEqual(hex('00000008 04d2162f'));
    expect(fe.gssencRequest()).toEqual(hex('00000008 04d21630'));
    expect(decodeStartupPacket(up(fe.sslRequest()))).toEqual({ kind: 'ssl' });
    expect(decodeStartupPacket(up(serialize.requestSsl()))).toEqual({ kind: 'ssl' });
    expect(decodeStartupPacket(up(fe.gssencRequest()))).toEqual({ kind: 'gssenc' });
    expect(fe.cancelRequest(1234, -2)).toEqual(hex('00000010 04d2162e 000004d2 fffffffe'));
    expect(decodeStartupPacket(up(fe.cancelRequest(1234, -2)))).toEqual({
      kind: 'cancel',
      processId: 1234,
      secretKey: -2,
    });
    // pg-protocol writes the same CancelRequest.
    expect(serialize.cancel(1234, 0x7fffffff)).toEqual(fe.cancelRequest(1234, 0x7fffffff));
    // An unsigned key is sent as its bit pattern and read back signed.
    expect(decodeStartupPacket(up(fe.cancelRequest(1, 0xfffffffe)))).toMatchObject({ secretKey: -2 });
  });

  it('round-trips a StartupMessage with its parameters in order', () => {
    const params = new Map([
      ['user', 'alice'],
      ['database', 'shop'],
      ['application_name', 'naïve ✓'],
      ['options', '-c search_path=public'],
      ['empty', ''],
    ]);
    const msg = fe.startupMessage(params);
    expect(msg.subarray(0, 8)).toEqual(
      Buffer.concat([hex('0000'), Buffer.from([0, msg.length]), hex('00030000')]),
    );
    const got = decodeStartupPacket(up(msg));
    expect(got).toEqual({ kind: 'startup', major: 3, minor: 0, params });
    if (got.kind !== 'startup') throw new Error('unreachable');
    expect([...got.params.keys()]).toEqual([...params.keys()]);
  });

  it('reads exact bytes of a minimal StartupMessage', () => {
    expect(fe.startupMessage(new Map([['user', 'u']]))).toEqual(hex('00000010 00030000 7573657200 7500 00'));
    expect(decodeStartupPacket(hex('00030000 7573657200 7500 00'))).toEqual({
      kind: 'startup',
      major: 3,
      minor: 0,
      params: new Map([['user', 'u']]),
    });
  });

  it("decodes pg-protocol's StartupMessage", () => {
    const got = decodeStartupPacket(up(serialize.startup({ user: 'bob', database: 'db' })));
    expect(got).toEqual({
      kind: 'startup',
      major: 3,
      minor: 0,
      params: new Map([
        ['user', 'bob'],
        ['database', 'db'],
        ['client_encoding', 'UTF8'],
      ]),
    });
  });

  it('reports a newer minor version for NegotiateProtocolVersion', () => {
    expect(decodeStartupPacket(up(fe.startupMessage(new Map([['user', 'u']]), 2)))).toMatchObject({
      major: 3,
      minor: 2,
    });
  });

  it('accepts a StartupMessage with no parameters (the session checks for user)', () => {
    expect(decodeStartupPacket(hex('00030000 00'))).toEqual({
      kind: 'startup',
      major: 3,
      minor: 0,
      params: new Map(),
    });
  });

  it('rejects protocol majors other than 3 with 0A000', () => {
    expectProtocolError(() => decodeStartupPacket(hex('00020000 00')), '0A000');
    expectProtocolError(() => decodeStartupPacket(hex('00040000 00')), '0A000');
    expectProtocolError(() => decodeStartupPacket(hex('04d21631')), '0A000');
  });

  it('rejects malformed startup packets with 08P01', () => {
    const bad = [
      '', // no version
      '000300', // truncated version
      '00030000', // no terminator
      '00030000 7573657200', // name without value
      '00030000 7573657200 75', // unterminated value
      '00030000 7573657200 7500', // missing final terminator
      '00030000 7573657200 7500 00 00', // bytes after the terminator
      '00030000 7500 6100 7500 6200 00', // duplicate parameter
      '04d2162f 00', // SSLRequest with extra bytes
      '04d21630 00000000', // GSSENCRequest with extra bytes
      '04d2162e 00000001', // CancelRequest without secret key
      '04d2162e 00000001 00000002 00', // CancelRequest with extra bytes
    ];
    for (const b of bad) expectProtocolError(() => decodeStartupPacket(hex(b)), '08P01');
  });

  it('rejects invalid UTF-8 in a parameter with 22021', () => {
    expectProtocolError(() => decodeStartupPacket(hex('00030000 7500 c328 00 00')), '22021');
  });
});

describe('simple and extended query messages', () => {
  it('round-trips Query, also from pg-protocol', () => {
    const sql = "SELECT 'ünïcode', E'\\x01' -- ☃";
    expect(decodeQuery(tp(fe.query(sql)))).toEqual({ sql });
    expect(decodeQuery(tp(serialize.query(sql)))).toEqual({ sql });
    expect(fe.query('SELECT 1')).toEqual(hex('51 0000000d 53454c4543542031 00'));
    expect(decodeQuery(tp(fe.query('')))).toEqual({ sql: '' });
  });

  it('rejects a Query without NUL, with trailing bytes, or invalid UTF-8', () => {
    expectProtocolError(() => decodeQuery(Buffer.from('SELECT 1')), '08P01');
    expectProtocolError(() => decodeQuery(hex('41 00 42')), '08P01');
    expectProtocolError(() => decodeQuery(hex('')), '08P01');
    expectProtocolError(() => decodeQuery(hex('53 ff 00')), '22021');
    expectProtocolError(() => decodeQuery(hex('ed a0 80 00')), '22021'); // UTF-16 surrogate
  });

  it('refuses to encode a string containing NUL', () => {
    expectProtocolError(() => fe.query('SELECT 1\0; DROP TABLE x'), '08P01');
  });

  it('round-trips Parse with unsigned type OIDs, also from pg-protocol', () => {
    const v = { name: 'stmt_1', sql: 'SELECT $1::int, $2', paramTypes: [23, 0, 4294967295] };
    expect(decodeParse(tp(fe.parse(v.name, v.sql, v.paramTypes)))).toEqual(v);
    expect(decodeParse(tp(serialize.parse({ name: 'q', text: 'SELECT $1', types: [25] })))).toEqual({
      name: 'q',
      sql: 'SELECT $1',
      paramTypes: [25],
    });
    expect(decodeParse(tp(fe.parse('', 'SELECT 1')))).toEqual({ name: '', sql: 'SELECT 1', paramTypes: [] });
  });

  it('rejects a Parse whose type count overruns or leaves trailing bytes', () => {
    expectProtocolError(() => decodeParse(hex('00 00 0002 00000017')), '08P01');
    expectProtocolError(() => decodeParse(hex('00 00 0001 00000017 00')), '08P01');
    expectProtocolError(() => decodeParse(hex('00 00 00')), '08P01');
    expectProtocolError(() => decodeParse(hex('00 00')), '08P01');
    expectProtocolError(() => decodeParse(hex('00')), '08P01');
  });

  it('round-trips Bind with NULLs, empty and binary values, as subarrays', () => {
    const v = {
      portal: 'p',
      statement: 's',
      paramFormats: [0, 1, 0],
      params: [Buffer.from('hello'), Buffer.from([0, 0, 0, 42]), null],
      resultFormats: [1, 0],
    };
    const msg = fe.bind(v);
    const got = decodeBind(tp(msg));
    expect(got).toEqual(v);
    expect(got.params[0]?.buffer).toBe(msg.buffer);
    const empty = decodeBind(tp(fe.bind({ params: [Buffer.alloc(0), null] })));
    expect(empty).toEqual({
      portal: '',
      statement: '',
      paramFormats: [],
      params: [Buffer.alloc(0), null],
      resultFormats: [],
    });
  });

  it('reads exact Bind bytes', () => {
    // portal "", statement "s", 1 format (text), 2 params ('7', NULL), 1 result format (binary)
    const payload = hex('00 7300 0001 0000 0002 00000001 37 ffffffff 0001 0001');
    expect(
      fe.bind({ statement: 's', paramFormats: [0], params: [Buffer.from('7'), null], resultFormats: [1] }),
    ).toEqual(Buffer.concat([hex('42'), Buffer.from([0, 0, 0, payload.length + 4]), payload]));
    expect(decodeBind(payload)).toEqual({
      portal: '',
      statement: 's',
      paramFormats: [0],
      params: [Buffer.from('7'), null],
      resultFormats: [1],
    });
  });

  it("decodes pg-protocol's Bind", () => {
    const got = decodeBind(
      tp(serialize.bind({ portal: 'p', statement: 's', values: ['1', null, Buffer.from([9])] })),
    );
    expect(got.portal).toBe('p');
    expect(got.statement).toBe('s');
    expect(got.params).toEqual([Buffer.from('1'), null, Buffer.from([9])]);
    expect(got.paramFormats).toEqual([0, 0, 1]);
  });

  it('rejects malformed Bind messages with 08P01', () => {
    const bad = {
      'param count overrunning': '00 00 0000 0003 00000001 31',
      'param length overrunning': '00 00 0000 0001 00000009 31 0000',
      'param length below -1': '00 00 0000 0001 fffffffe 0000',
      'format count overrunning': '00 00 0005 0000',
      'two formats for one param': '00 00 0002 0000 0000 0001 00000001 31 0000',
      'result format count overrunning': '00 00 0000 0000 0003 0000',
      'missing result formats': '00 00 0000 0000',
      'trailing byte': '00 00 0000 0000 0000 00',
      'unterminated portal': '70',
      'unterminated statement': '00 73',
      'huge param count': '00 00 0000 ffff',
    };
    for (const [why, b] of Object.entries(bad)) {
      const err = expectProtocolError(() => decodeBind(hex(b)), '08P01');
      expect(err.message, why).toMatch(/^invalid Bind message: /);
    }
  });

  it('rejects a format code other than 0 or 1 with 22023, as Postgres does', () => {
    for (const b of ['00 00 0001 0002 0001 00000001 31 0000', '00 00 0000 0000 0001 ffff']) {
      const err = expectProtocolError(() => decodeBind(hex(b)), '22023');
      expect(err.message).toMatch(/^unsupported format code: (2|-1)$/);
    }
  });

  it('round-trips Describe and Close, also from pg-protocol', () => {
    expect(decodeDescribe(tp(fe.describe('S', 'stmt')))).toEqual({ target: 'S', name: 'stmt' });
    expect(decodeDescribe(tp(fe.describe('P')))).toEqual({ target: 'P', name: '' });
    expect(decodeDescribe(tp(serialize.describe({ type: 'P', name: 'x' })))).toEqual({
      target: 'P',
      name: 'x',
    });
    expect(decodeClose(tp(fe.close('P', 'portal')))).toEqual({ target: 'P', name: 'portal' });
    expect(decodeClose(tp(serialize.close({ type: 'S', name: 's1' })))).toEqual({ target: 'S', name: 's1' });
    expect(fe.describe('S', 'a')).toEqual(hex('44 00000007 53 6100'));
  });

  it('rejects Describe/Close with another target byte, truncation or trailing bytes', () => {
    for (const dec of [decodeDescribe, decodeClose]) {
      expectProtocolError(() => dec(hex('58 00')), '08P01');
      expectProtocolError(() => dec(hex('')), '08P01');
      expectProtocolError(() => dec(hex('53')), '08P01');
      expectProtocolError(() => dec(hex('53 00 00')), '08P01');
    }
  });

  it('round-trips Execute, also from pg-protocol', () => {
    expect(decodeExecute(tp(fe.execute('p1', 50)))).toEqual({ portal: 'p1', maxRows: 50 });
    expect(decodeExecute(tp(fe.execute()))).toEqual({ portal: '', maxRows: 0 });
    expect(decodeExecute(tp(serialize.execute({ portal: 'x', rows: 7 })))).toEqual({
      portal: 'x',
      maxRows: 7,
    });
    expect(decodeExecute(hex('00 ffffffff'))).toEqual({ portal: '', maxRows: -1 });
    expectProtocolError(() => decodeExecute(hex('00 000000')), '08P01');
    expectProtocolError(() => decodeExecute(hex('00 00000000 00')), '08P01');
  });

  it('checks the empty messages', () => {
    expect(fe.sync()).toEqual(hex('53 00000004'));
    expect(fe.flush()).toEqual(hex('48 00000004'));
    expect(fe.terminate()).toEqual(hex('58 00000004'));
    expect(fe.copyDone()).toEqual(hex('63 00000004'));
    expect(serialize.sync()).toEqual(fe.sync());
    expect(serialize.flush()).toEqual(fe.flush());
    expect(serialize.end()).toEqual(fe.terminate());
    decodeEmpty(tp(fe.sync()), 'Sync');
    expectProtocolError(() => decodeEmpty(hex('00'), 'Sync'), '08P01');
  });
});

describe('authentication and COPY messages', () => {
  it('round-trips SASLInitialResponse, also from pg-protocol', () => {
    const data = Buffer.from('n,,n=,r=rOprNGfwEbeRWgbNEkqO');
    expect(decodeSASLInitialResponse(tp(fe.saslInitialResponse('SCRAM-SHA-256', data)))).toEqual({
      mechanism: 'SCRAM-SHA-256',
      data,
    });
    expect(
      decodeSASLInitialResponse(
        tp(serialize.sendSASLInitialResponseMessage('SCRAM-SHA-256', data.toString())),
      ),
    ).toEqual({ mechanism: 'SCRAM-SHA-256', data });
  });

  it('returns an empty Buffer for an initial response length of -1', () => {
    const msg = fe.saslInitialResponse('SCRAM-SHA-256', null);
    expect(msg.subarray(-4)).toEqual(hex('ffffffff'));
    const got = decodeSASLInitialResponse(tp(msg));
    expect(got.mechanism).toBe('SCRAM-SHA-256');
    expect(got.data.length).toBe(0);
  });

  it('rejects SASLInitialResponse with a bad length', () => {
    expectProtocolError(() => decodeSASLInitialResponse(hex('4d00 fffffffe')), '08P01');
    expectProtocolError(() => decodeSASLInitialResponse(hex('4d00 00000005 6162')), '08P01');
    expectProtocolError(() => decodeSASLInitialResponse(hex('4d00 00000001 61 62')), '08P01');
    expectProtocolError(() => decodeSASLInitialResponse(hex('4d00 0000')), '08P01');
    expectProtocolError(() => decodeSASLInitialResponse(hex('4d')), '08P01');
  });

  it('returns the SASLResponse payload as is', () => {
    const final = 'c=biws,r=abc,p=dHpbWVxQ==';
    const msg = serialize.sendSCRAMClientFinalMessage(final);
    expect(decodeSASLResponse(tp(msg)).toString()).toBe(final);
    expect(decodeSASLResponse(tp(fe.saslResponse(Buffer.from(final)))).toString()).toBe(final);
  });

  it('round-trips PasswordMessage and CopyFail', () => {
    expect(decodePassword(tp(fe.passwordMessage('hunter2')))).toBe('hunter2');
    expect(decodePassword(tp(serialize.password('p@ss wörd')))).toBe('p@ss wörd');
    expect(fe.passwordMessage('ab')).toEqual(hex('70 00000007 616200'));
    expectProtocolError(() => decodePassword(hex('6162')), '08P01');
    expectProtocolError(() => decodePassword(hex('6100 62')), '08P01');
    expect(decodeCopyFail(tp(fe.copyFail('aborted by user')))).toBe('aborted by user');
    expect(decodeCopyFail(tp(serialize.copyFail('x')))).toBe('x');
    expectProtocolError(() => decodeCopyFail(hex('78')), '08P01');
  });

  it('encodes CopyData like pg-protocol', () => {
    const d = Buffer.from('1\tfoo\n');
    expect(fe.copyData(d)).toEqual(serialize.copyData(d));
    expect(fe.copyDone()).toEqual(serialize.copyDone());
  });
});

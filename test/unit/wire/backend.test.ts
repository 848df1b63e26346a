// Backend encoders/decoders: exact bytes, round trips, cross-check with pg-protocol's parser, malformed input.
import { Parser } from 'pg-protocol/dist/parser.js';
import { describe, expect, it } from 'vitest';
import { BackendCode } from '../../../src/wire/codes.js';
import * as be from '../../../src/wire/index.js';
import { expectProtocolError, hex, typedPayload as tp } from './helpers.js';

/** Parses whole backend messages with pg-protocol (an independent implementation). */
function pgParse(...msgs: Buffer[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  new Parser().parse(Buffer.concat(msgs), (m) => out.push(m as unknown as Record<string, unknown>));
  return out;
}

const fields: be.FieldDescription[] = [
  { name: 'id', tableOid: 16384, columnAttnum: 1, typeOid: 23, typeSize: 4, typeModifier: -1, format: 0 },
  {
    name: 'émail',
    tableOid: 4294967295,
    columnAttnum: -7,
    typeOid: 1043,
    typeSize: -1,
    typeModifier: 259,
    format: 1,
  },
  { name: '', tableOid: 0, columnAttnum: 0, typeOid: 25, typeSize: -2, typeModifier: -1, format: 0 },
];

const fullError: be.ErrorFields = {
  severity: 'ERROR',
  code: '23502',
  message: 'null value in column "email" of relation "customers" violates not-null constraint',
  detail: 'Failing row contains (1, null, secret).',
  hint: 'Provide an email.',
  position: 15,
  internalPosition: 3,
  internalQuery: 'SELECT 1',
  where: 'PL/pgSQL function f() line 3 at SQL statement',
  schema: 'public',
  table: 'customers',
  column: 'email',
  dataType: 'text',
  constraint: 'customers_email_not_null',
  file: 'execMain.c',
  line: '1883',
  routine: 'ExecConstraints',
};

describe('backend encoders: exact bytes', () => {
  it('writes the fixed messages byte for byte', () => {
    expect(be.readyForQuery('I')).toEqual(hex('5a 00000005 49'));
    expect(be.readyForQuery('T')).toEqual(hex('5a 00000005 54'));
    expect(be.readyForQuery('E')).toEqual(hex('5a 00000005 45'));
    expect(be.authenticationOk()).toEqual(hex('52 00000008 00000000'));
    expect(be.authenticationCleartextPassword()).toEqual(hex('52 00000008 00000003'));
    expect(be.authenticationMD5Password(hex('01020304'))).toEqual(hex('52 0000000c 00000005 01020304'));
    expect(be.sslRefused()).toEqual(hex('4e'));
    expect(be.parseComplete()).toEqual(hex('31 00000004'));
    expect(be.bindComplete()).toEqual(hex('32 00000004'));
    expect(be.closeComplete()).toEqual(hex('33 00000004'));
    expect(be.noData()).toEqual(hex('6e 00000004'));
    expect(be.emptyQueryResponse()).toEqual(hex('49 00000004'));
    expect(be.portalSuspended()).toEqual(hex('73 00000004'));
    expect(be.backendKeyData(1, -1)).toEqual(hex('4b 0000000c 00000001 ffffffff'));
    expect(be.commandComplete('SELECT 1')).toEqual(hex('43 0000000d 53454c4543542031 00'));
    expect(be.parameterStatus('a', 'b')).toEqual(hex('53 00000008 6100 6200'));
    expect(be.authenticationSASL(['SCRAM-SHA-256'])).toEqual(
      Buffer.concat([hex('52 00000017 0000000a'), Buffer.from('SCRAM-SHA-256\0\0')]),
    );
    expect(be.dataRow([Buffer.from('ab'), null])).toEqual(hex('44 00000010 0002 00000002 6162 ffffffff'));
    expect(be.negotiateProtocolVersion(0, ['_pq_.x'])).toEqual(
      hex('76 00000013 00000000 00000001 5f70715f2e7800'),
    );
    expect(be.parameterDescription([23, 25])).toEqual(hex('74 0000000e 0002 00000017 00000019'));
    expect(be.rowDescription([fields[0]!])).toEqual(
      hex('54 0000001b 0001 696400 00004000 0001 00000017 0004 ffffffff 0000'),
    );
    expect(be.errorResponse({ severity: 'FATAL', code: '28P01', message: 'x' })).toEqual(
      hex('45 0000001d 53 464154414c00 56 464154414c00 43 323850303100 4d 7800 00'),
    );
  });

  it('rejects values the wire format cannot carry', () => {
    expectProtocolError(() => be.parameterStatus('a\0b', 'c'), '08P01');
    expectProtocolError(
      () => be.errorResponse({ severity: 'ERROR', code: 'XX000', message: 'a\0b' }),
      '08P01',
    );
    expectProtocolError(() => be.authenticationSASL(['']), '08P01');
    expectProtocolError(() => be.authenticationMD5Password(hex('0102')), '08P01');
    expectProtocolError(() => be.dataRow(new Array<Buffer | null>(65536).fill(null)), '54000');
    expectProtocolError(() => be.parameterDescription(new Array<number>(65536).fill(0)), '54000');
    expect(be.decodeDataRow(tp(be.dataRow(new Array<Buffer | null>(65535).fill(null))))).toHaveLength(65535);
    expectProtocolError(
      () =>
        be.errorResponse({
          severity: 'ERROR',
          code: 'XX000',
          message: 'm',
          unknownFields: new Map([['D', 'smuggled detail']]),
        }),
      '08P01',
    );
    expectProtocolError(
      () =>
        be.errorResponse({
          severity: 'ERROR',
          code: 'XX000',
          message: 'm',
          unknownFields: new Map([['ab', 'x']]),
        }),
      '08P01',
    );
  });
});

describe('backend round trips', () => {
  it('round-trips RowDescription with unsigned OIDs and signed sizes', () => {
    expect(be.decodeRowDescription(tp(be.rowDescription(fields)))).toEqual(fields);
    expect(be.decodeRowDescription(tp(be.rowDescription([])))).toEqual([]);
  });

  it('round-trips DataRow with subarrays of the payload', () => {
    const cells = [Buffer.from('1'), null, Buffer.alloc(0), Buffer.from([0, 255, 0])];
    const msg = be.dataRow(cells);
    const got = be.decodeDataRow(tp(msg));
    expect(got).toEqual(cells);
    expect(got[0]?.buffer).toBe(msg.buffer);
    expect(be.decodeDataRow(tp(be.dataRow([])))).toEqual([]);
  });

  it('round-trips ErrorResponse and NoticeResponse with every field', () => {
    expect(be.decodeErrorResponse(tp(be.errorResponse(fullError)))).toEqual(fullError);
    const notice: be.ErrorFields = {
      severity: 'NOTICE',
      code: '00000',
      message: 'relation exists, skipping',
    };
    const msg = be.noticeResponse(notice);
    expect(msg[0]).toBe(BackendCode.NoticeResponse);
    expect(be.decodeErrorResponse(tp(msg))).toEqual(notice);
  });

  it('keeps a localized severity and unknown field codes through a round trip', () => {
    const payload = Buffer.from('SFEHLER\0VERROR\0C42P01\0MRelation »x« existiert nicht\0P15\0Zfuture\0\0');
    const got = be.decodeErrorResponse(payload);
    expect(got).toEqual({
      severity: 'ERROR',
      localizedSeverity: 'FEHLER',
      code: '42P01',
      message: 'Relation »x« existiert nicht',
      position: 15,
      unknownFields: new Map([['Z', 'future']]),
    });
    expect(tp(be.errorResponse(got))).toEqual(payload);
  });

  it('drops DETAIL for good when the field is deleted (redaction)', () => {
    const got = be.decodeErrorResponse(tp(be.errorResponse(fullError)));
    delete got.detail;
    got.message = 'not_null_violation';
    const again = be.decodeErrorResponse(tp(be.errorResponse(got)));
    expect(again.detail).toBeUndefined();
    expect(again.message).toBe('not_null_violation');
    expect(be.errorResponse(got).includes(Buffer.from('Failing row'))).toBe(false);
  });

  it('accepts a pre-9.6 error without V', () => {
    expect(be.decodeErrorResponse(Buffer.from('SWARNING\0C01000\0Mw\0\0'))).toEqual({
      severity: 'WARNING',
      code: '01000',
      message: 'w',
    });
  });

  it('round-trips ReadyForQuery', () => {
    for (const s of ['I', 'T', 'E'] as const) expect(be.decodeReadyForQuery(tp(be.readyForQuery(s)))).toBe(s);
  });

  it('round-trips every Authentication form', () => {
    const d = Buffer.from('r=nonce,s=salt,i=4096');
    expect(be.decodeAuthentication(tp(be.authenticationOk()))).toEqual({ type: 'ok' });
    expect(be.decodeAuthentication(tp(be.authenticationCleartextPassword()))).toEqual({ type: 'cleartext' });
    expect(be.decodeAuthentication(tp(be.authenticationMD5Password(hex('deadbeef'))))).toEqual({
      type: 'md5',
      salt: hex('deadbeef'),
    });
    expect(
      be.decodeAuthentication(tp(be.authenticationSASL(['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256']))),
    ).toEqual({
      type: 'sasl',
      mechanisms: ['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256'],
    });
    expect(be.decodeAuthentication(tp(be.authenticationSASLContinue(d)))).toEqual({
      type: 'sasl-continue',
      data: d,
    });
    expect(be.decodeAuthentication(tp(be.authenticationSASLFinal(d)))).toEqual({
      type: 'sasl-final',
      data: d,
    });
    expect(be.decodeAuthentication(hex('00000007'))).toEqual({ type: 'other', code: 7 });
    expect(be.decodeAuthentication(hex('00000008 0102'))).toEqual({ type: 'other', code: 8 });
  });

  it('round-trips BackendKeyData, ParameterStatus, CommandComplete, ParameterDescription, NegotiateProtocolVersion', () => {
    expect(be.decodeBackendKeyData(tp(be.backendKeyData(31337, -559038737)))).toEqual({
      processId: 31337,
      secretKey: -559038737,
    });
    expect(be.decodeBackendKeyData(tp(be.backendKeyData(1, 0xdeadbeef)))).toEqual({
      processId: 1,
      secretKey: -559038737,
    });
    expect(be.decodeParameterStatus(tp(be.parameterStatus('TimeZone', 'Europe/Zürich')))).toEqual({
      name: 'TimeZone',
      value: 'Europe/Zürich',
    });
    expect(be.decodeCommandComplete(tp(be.commandComplete('INSERT 0 5')))).toBe('INSERT 0 5');
    expect(be.decodeParameterDescription(tp(be.parameterDescription([23, 0, 4294967295])))).toEqual([
      23, 0, 4294967295,
    ]);
    expect(
      be.decodeNegotiateProtocolVersion(tp(be.negotiateProtocolVersion(0, ['_pq_.a', '_pq_.b']))),
    ).toEqual({
      minor: 0,
      unsupported: ['_pq_.a', '_pq_.b'],
    });
  });

  it('decodes NotificationResponse', () => {
    expect(be.decodeNotificationResponse(hex('00000007 6368616e00 706179206c6f616400'))).toEqual({
      processId: 7,
      channel: 'chan',
      payload: 'pay load',
    });
  });
});

describe("cross-check with pg-protocol's parser", () => {
  it('parses our encoders the same way', () => {
    const [auth, sasl, cont, fin, ps, key, rfq, rd, dr, cc, err, notice, pc, bc, nd, eq, pd] = pgParse(
      be.authenticationOk(),
      be.authenticationSASL(['SCRAM-SHA-256']),
      be.authenticationSASLContinue(Buffer.from('r=1')),
      be.authenticationSASLFinal(Buffer.from('v=2')),
      be.parameterStatus('server_version', '15.8'),
      be.backendKeyData(99, 12345),
      be.readyForQuery('T'),
      be.rowDescription(fields),
      be.dataRow([Buffer.from('42'), null]),
      be.commandComplete('SELECT 1'),
      be.errorResponse(fullError),
      be.noticeResponse({ severity: 'NOTICE', code: '00000', message: 'n' }),
      be.parseComplete(),
      be.bindComplete(),
      be.noData(),
      be.emptyQueryResponse(),
      be.parameterDescription([23]),
    );
    expect(auth?.name).toBe('authenticationOk');
    expect(sasl).toMatchObject({ name: 'authenticationSASL', mechanisms: ['SCRAM-SHA-256'] });
    expect(cont).toMatchObject({ name: 'authenticationSASLContinue', data: 'r=1' });
    expect(fin).toMatchObject({ name: 'authenticationSASLFinal', data: 'v=2' });
    expect(ps).toMatchObject({
      name: 'parameterStatus',
      parameterName: 'server_version',
      parameterValue: '15.8',
    });
    expect(key).toMatchObject({ name: 'backendKeyData', processID: 99, secretKey: 12345 });
    expect(rfq).toMatchObject({ name: 'readyForQuery', status: 'T' });
    expect(rd?.name).toBe('rowDescription');
    expect(
      (rd!.fields as Record<string, unknown>[]).map((f) => [
        f.name,
        f.tableID,
        f.columnID,
        f.dataTypeID,
        f.format,
      ]),
    ).toEqual([
      ['id', 16384, 1, 23, 'text'],
      ['émail', 4294967295, -7, 1043, 'binary'],
      ['', 0, 0, 25, 'text'],
    ]);
    expect(dr).toMatchObject({ name: 'dataRow', fields: ['42', null] });
    expect(cc).toMatchObject({ name: 'commandComplete', text: 'SELECT 1' });
    expect(err).toMatchObject({
      name: 'error',
      severity: 'ERROR',
      code: '23502',
      message: fullError.message,
      detail: fullError.detail,
      hint: fullError.hint,
      position: '15',
      internalPosition: '3',
      internalQuery: 'SELECT 1',
      where: fullError.where,
      schema: 'public',
      table: 'customers',
      column: 'email',
      dataType: 'text',
      constraint: 'customers_email_not_null',
      file: 'execMain.c',
      line: '1883',
      routine: 'ExecConstraints',
    });
    expect(notice).toMatchObject({ name: 'notice', severity: 'NOTICE', message: 'n' });
    expect([pc?.name, bc?.name, nd?.name, eq?.name]).toEqual([
      'parseComplete',
      'bindComplete',
      'noData',
      'emptyQuery',
    ]);
    expect(pd).toMatchObject({ name: 'parameterDescription', dataTypeIDs: [23] });
  });
});

describe('backend decoders reject malformed payloads', () => {
  it('RowDescription', () => {
    const good = tp(be.rowDescription([fields[0]!]));
    expectProtocolError(() => be.decodeRowDescription(good.subarray(0, good.length - 1)), '08P01');
    expectProtocolError(() => be.decodeRowDescription(Buffer.concat([good, hex('00')])), '08P01');
    expectProtocolError(() => be.decodeRowDescription(hex('0002 6100')), '08P01');
    expectProtocolError(() => be.decodeRowDescription(hex('00')), '08P01');
    const badFormat = Buffer.from(good);
    badFormat.writeInt16BE(2, badFormat.length - 2);
    expectProtocolError(() => be.decodeRowDescription(badFormat), '08P01');
  });

  it('DataRow', () => {
    expectProtocolError(() => be.decodeDataRow(hex('0001 00000005 6162')), '08P01');
    expectProtocolError(() => be.decodeDataRow(hex('0002 ffffffff')), '08P01');
    expectProtocolError(() => be.decodeDataRow(hex('0001 fffffffe')), '08P01');
    expectProtocolError(() => be.decodeDataRow(hex('0001 80000000')), '08P01');
    expectProtocolError(() => be.decodeDataRow(hex('0000 00')), '08P01');
    expectProtocolError(() => be.decodeDataRow(hex('')), '08P01');
  });

  it('ErrorResponse', () => {
    const bad = [
      'SERROR\0VERROR\0C42000\0Mm\0', // missing final NUL
      'SERROR\0VERROR\0C42000\0Mm', // unterminated value
      'SERROR\0VERROR\0C42000\0Mm\0\0x', // trailing bytes
      'SERROR\0VERROR\0Mm\0\0', // no code
      'SERROR\0VERROR\0C42000\0\0', // no message
      'C42000\0Mm\0\0', // no severity
      'SFEHLER\0C42000\0Mm\0\0', // localized severity without V
      'SERROR\0VOOPS\0C42000\0Mm\0\0', // unknown V
      'SERROR\0VERROR\0C42000\0Mm\0Mn\0\0', // duplicate field
      'SERROR\0VERROR\0C42000\0Mm\0Pabc\0\0', // non-numeric position
      '',
    ];
    for (const b of bad) expectProtocolError(() => be.decodeErrorResponse(Buffer.from(b, 'latin1')), '08P01');
    expectProtocolError(() => be.decodeErrorResponse(hex('53ff00 00')), '22021');
  });

  it('ReadyForQuery', () => {
    expectProtocolError(() => be.decodeReadyForQuery(hex('')), '08P01');
    expectProtocolError(() => be.decodeReadyForQuery(hex('58')), '08P01');
    expectProtocolError(() => be.decodeReadyForQuery(hex('4949')), '08P01');
  });

  it('Authentication', () => {
    expectProtocolError(() => be.decodeAuthentication(hex('000000')), '08P01');
    expectProtocolError(() => be.decodeAuthentication(hex('00000000 00')), '08P01');
    expectProtocolError(() => be.decodeAuthentication(hex('00000005 010203')), '08P01');
    expectProtocolError(() => be.decodeAuthentication(hex('00000005 0102030405')), '08P01');
    expectProtocolError(() => be.decodeAuthentication(hex('0000000a 00')), '08P01');
    expectProtocolError(() => be.decodeAuthentication(hex('0000000a 4100')), '08P01');
    expectProtocolError(() => be.decodeAuthentication(hex('0000000a 410000 00')), '08P01');
  });

  it('BackendKeyData, ParameterStatus, CommandComplete, ParameterDescription, NegotiateProtocolVersion', () => {
    expectProtocolError(() => be.decodeBackendKeyData(hex('00000001 000000')), '08P01');
    expectProtocolError(() => be.decodeBackendKeyData(hex('00000001 00000002 00')), '08P01');
    expectProtocolError(() => be.decodeParameterStatus(hex('6100')), '08P01');
    expectProtocolError(() => be.decodeParameterStatus(hex('6100 6200 63')), '08P01');
    expectProtocolError(() => be.decodeCommandComplete(hex('53454c454354')), '08P01');
    expectProtocolError(() => be.decodeParameterDescription(hex('0002 00000017')), '08P01');
    expectProtocolError(() => be.decodeNegotiateProtocolVersion(hex('00000000 ffffffff')), '08P01');
    expectProtocolError(() => be.decodeNegotiateProtocolVersion(hex('00000000 00000002 6100')), '08P01');
  });
});

// Decoders of backend messages (src/wire/backend.ts): what the encoders write decodes back, and malformed payloads are refused.
import { describe, expect, it } from 'vitest';
import * as be from '../../../src/wire/backend.js';
import * as enc from '../../../src/wire/backend-encode.js';
import { expectProtocolError, sampleFields as fields, hex, typedPayload as tp } from './helpers.js';

describe('backend round trips', () => {
  it('round-trips RowDescription with unsigned OIDs and signed sizes', () => {
    expect(be.decodeRowDescription(tp(enc.rowDescription(fields)))).toEqual(fields);
    expect(be.decodeRowDescription(tp(enc.rowDescription([])))).toEqual([]);
  });

  it('round-trips DataRow with subarrays of the payload', () => {
    const cells = [Buffer.from('1'), null, Buffer.alloc(0), Buffer.from([0, 255, 0])];
    const msg = enc.dataRow(cells);
    const got = be.decodeDataRow(tp(msg));
    expect(got).toEqual(cells);
    expect(got[0]?.buffer).toBe(msg.buffer);
    expect(be.decodeDataRow(tp(enc.dataRow([])))).toEqual([]);
  });

  it('round-trips ReadyForQuery', () => {
    for (const s of ['I', 'T', 'E'] as const)
      expect(be.decodeReadyForQuery(tp(enc.readyForQuery(s)))).toBe(s);
  });

  it('round-trips every Authentication form', () => {
    const d = Buffer.from('r=nonce,s=salt,i=4096');
    expect(be.decodeAuthentication(tp(enc.authenticationOk()))).toEqual({ type: 'ok' });
    expect(be.decodeAuthentication(tp(enc.authenticationCleartextPassword()))).toEqual({ type: 'cleartext' });
    expect(be.decodeAuthentication(tp(enc.authenticationMD5Password(hex('deadbeef'))))).toEqual({
      type: 'md5',
      salt: hex('deadbeef'),
    });
    expect(
      be.decodeAuthentication(tp(enc.authenticationSASL(['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256']))),
    ).toEqual({
      type: 'sasl',
      mechanisms: ['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-256'],
    });
    expect(be.decodeAuthentication(tp(enc.authenticationSASLContinue(d)))).toEqual({
      type: 'sasl-continue',
      data: d,
    });
    expect(be.decodeAuthentication(tp(enc.authenticationSASLFinal(d)))).toEqual({
      type: 'sasl-final',
      data: d,
    });
    expect(be.decodeAuthentication(hex('00000007'))).toEqual({ type: 'other', code: 7 });
    expect(be.decodeAuthentication(hex('00000008 0102'))).toEqual({ type: 'other', code: 8 });
  });

  it('round-trips BackendKeyData, ParameterStatus, CommandComplete, ParameterDescription, NegotiateProtocolVersion', () => {
    expect(be.decodeBackendKeyData(tp(enc.backendKeyData(31337, -559038737)))).toEqual({
      processId: 31337,
      secretKey: -559038737,
    });
    expect(be.decodeBackendKeyData(tp(enc.backendKeyData(1, 0xdeadbeef)))).toEqual({
      processId: 1,
      secretKey: -559038737,
    });
    expect(be.decodeParameterStatus(tp(enc.parameterStatus('TimeZone', 'Europe/Zürich')))).toEqual({
      name: 'TimeZone',
      value: 'Europe/Zürich',
    });
    expect(be.decodeCommandComplete(tp(enc.commandComplete('INSERT 0 5')))).toBe('INSERT 0 5');
    expect(be.decodeParameterDescription(tp(enc.parameterDescription([23, 0, 4294967295])))).toEqual([
      23, 0, 4294967295,
    ]);
    expect(
      be.decodeNegotiateProtocolVersion(tp(enc.negotiateProtocolVersion(0, ['_pq_.a', '_pq_.b']))),
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

describe('backend decoders reject malformed payloads', () => {
  it('RowDescription', () => {
    const good = tp(enc.rowDescription([fields[0]!]));
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

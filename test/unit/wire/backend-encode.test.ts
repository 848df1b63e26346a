// Encoders of backend messages (src/wire/backend-encode.ts): exact bytes, values the format cannot carry, pg-protocol's parser reading them.
import { describe, expect, it } from 'vitest';
import { decodeDataRow } from '../../../src/wire/backend.js';
import * as be from '../../../src/wire/backend-encode.js';
import { expectProtocolError, sampleFields as fields, hex, pgParse, typedPayload as tp } from './helpers.js';

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
  });

  it('rejects values the wire format cannot carry', () => {
    expectProtocolError(() => be.parameterStatus('a\0b', 'c'), '08P01');
    expectProtocolError(() => be.authenticationSASL(['']), '08P01');
    expectProtocolError(() => be.authenticationMD5Password(hex('0102')), '08P01');
    expectProtocolError(() => be.dataRow(new Array<Buffer | null>(65536).fill(null)), '54000');
    expectProtocolError(() => be.parameterDescription(new Array<number>(65536).fill(0)), '54000');
    expect(decodeDataRow(tp(be.dataRow(new Array<Buffer | null>(65535).fill(null))))).toHaveLength(65535);
  });
});

describe("cross-check with pg-protocol's parser", () => {
  it('parses our encoders the same way', () => {
    const [auth, sasl, cont, fin, ps, key, rfq, rd, dr, cc, pc, bc, nd, eq, pd] = pgParse(
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
    expect([pc?.name, bc?.name, nd?.name, eq?.name]).toEqual([
      'parseComplete',
      'bindComplete',
      'noData',
      'emptyQuery',
    ]);
    expect(pd).toMatchObject({ name: 'parameterDescription', dataTypeIDs: [23] });
  });
});

// Masking on the wire: DataRow fields become ***** (NULL too), RowDescription types them as text.
import { describe, expect, test } from 'vitest';
import { MASK, maskDataRow, maskRowDescription } from '../../../src/proxy/masking.js';
import { decodeDataRow, decodeRowDescription } from '../../../src/wire/backend.js';
import { dataRow, rowDescription } from '../../../src/wire/backend-encode.js';

describe('masking', () => {
  test('masked fields, NULL included, become *****; the others keep their bytes', () => {
    const row = dataRow([Buffer.from('1'), null, Buffer.from('ada@example.com'), Buffer.from([0, 1, 2])]);
    const out = maskDataRow(row, new Set([1, 2]));
    expect(decodeDataRow(out.subarray(5)).map((c) => (c === null ? null : c.toString('hex')))).toEqual([
      Buffer.from('1').toString('hex'),
      MASK.toString('hex'),
      MASK.toString('hex'),
      '000102',
    ]);
    expect(out.readInt32BE(1)).toBe(out.length - 1);
  });

  test('rows are written into the memory the allocator hands out, one after the other', () => {
    const arena = Buffer.alloc(256);
    let at = 0;
    const carve = (n: number) => {
      const b = arena.subarray(at, at + n);
      at += n;
      return b;
    };
    const a = maskDataRow(dataRow([Buffer.from('x'), Buffer.from('secret')]), new Set([1]), carve);
    const b = maskDataRow(dataRow([Buffer.from('y'), null]), new Set([1]), carve);
    expect(a.buffer).toBe(arena.buffer);
    expect(b.byteOffset).toBe(a.byteOffset + a.length);
    expect(decodeDataRow(b.subarray(5)).map((c) => c?.toString())).toEqual(['y', '*****']);
  });

  test('a masked column reads as text (25, -1, -1) in text format whatever was asked', () => {
    const rd = rowDescription([
      { name: 'id', tableOid: 16384, columnAttnum: 1, typeOid: 23, typeSize: 4, typeModifier: -1, format: 1 },
      {
        name: 'amount',
        tableOid: 16384,
        columnAttnum: 3,
        typeOid: 1700,
        typeSize: -1,
        typeModifier: 655366,
        format: 1,
      },
    ]);
    const fields = decodeRowDescription(maskRowDescription(rd.subarray(5), new Set([1])).subarray(5));
    expect(fields[0]).toMatchObject({ typeOid: 23, format: 1 });
    expect(fields[1]).toMatchObject({
      name: 'amount',
      tableOid: 16384,
      columnAttnum: 3,
      typeOid: 25,
      typeSize: -1,
      typeModifier: -1,
      format: 0,
    });
  });
});

// Byte offsets to code point offsets: checkpoints every 64 code points give the answer a per-character table gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildOffsetMap } from '../../../src/sql/utf8-offsets.js';

/** The reference: the code point holding byte `b` of `text`'s UTF-8, from a table of every code point's start. */
function reference(text: string, b: number): number {
  const starts: number[] = [];
  let bytes = 0;
  for (const ch of text) {
    starts.push(bytes);
    bytes += Buffer.byteLength(ch, 'utf8');
  }
  if (b <= 0) return 0;
  if (b >= bytes) return starts.length;
  let k = 0;
  while (k + 1 < starts.length && (starts[k + 1] as number) <= b) k++;
  return k;
}

describe('buildOffsetMap', () => {
  it('maps every byte offset of mixed text (1- to 4-byte characters, over many checkpoints) as the per-character table does', () => {
    const text = `SELECT 'é€😀a', ${'ab€😀é'.repeat(60)} -- ✓`;
    const m = buildOffsetMap(text);
    const bytes = Buffer.byteLength(text, 'utf8');
    expect(m.ascii).toBe(false);
    expect(m.byteLength).toBe(bytes);
    expect(m.charLength).toBe([...text].length);
    for (let b = -1; b <= bytes + 1; b++) expect(m.toChar(b)).toBe(reference(text, b));
  });

  it('agrees with the table on random strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 300 }), (text) => {
        const m = buildOffsetMap(text);
        const bytes = Buffer.byteLength(text, 'utf8');
        for (let b = 0; b <= bytes; b++) if (m.toChar(b) !== reference(text, b)) return false;
        return m.charLength === [...text].length && m.byteLength === bytes;
      }),
      { numRuns: 200 },
    );
  });

  it('holds a 30 million character non-ASCII text in a few megabytes', () => {
    // Decoded from bytes, as a Query's text is: one flat string before measuring.
    const text = Buffer.alloc(60_000_000, 'é').toString('utf8');
    const before = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    const m = buildOffsetMap(text);
    const after = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
    expect(after - before).toBeLessThan(16 * 2 ** 20);
    expect(m.toChar(2 * 12_345_678 + 1)).toBe(12_345_678);
    expect(m.charLength).toBe(30_000_000);
  });
});

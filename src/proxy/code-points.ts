// Text by Unicode code points, as the analysis's offsets and Postgres's positions count them.

const SURROGATE = /[\uD800-\uDFFF]/;

/** `text.slice` by Unicode code points (the analysis's offsets count code points, as Postgres's positions do). */
export function sliceCodePoints(text: string, start: number, length: number): string {
  // Without surrogates code points are code units (one native scan, not a loop per character).
  if (!SURROGATE.test(text)) return length <= 0 ? text.slice(start) : text.slice(start, start + length);
  let i = 0;
  let cp = 0;
  while (cp < start && i < text.length) {
    i += (text.codePointAt(i) ?? 0) > 0xffff ? 2 : 1;
    cp++;
  }
  if (length <= 0) return text.slice(i);
  let j = i;
  while (cp < start + length && j < text.length) {
    j += (text.codePointAt(j) ?? 0) > 0xffff ? 2 : 1;
    cp++;
  }
  return text.slice(i, j);
}

/** `text` with its first `count` code points replaced by spaces (positions in the rest stay those of the whole). */
export function blankCodePoints(text: string, count: number): string {
  const head = sliceCodePoints(text, 0, count);
  return ' '.repeat(count) + text.slice(head.length);
}

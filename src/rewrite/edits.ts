// Byte-span edits of a SQL text, applied at once, and the map from the edited text's positions back to the caller's.
import type { AnalysisRefusal } from '../sql/analysis-types.js';

/** Replace bytes [start, end) of the original UTF-8 text by `text`. */
export interface Edit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/** The rewrite cannot vouch for its output: the statement is refused with this. */
export interface RewriteRefusal {
  readonly refusal: AnalysisRefusal;
}

/** One replaced span, in characters (code points) of the original and of the rewritten text. */
interface Segment {
  readonly fromStart: number;
  readonly fromEnd: number;
  readonly toStart: number;
  readonly toEnd: number;
}

/**
 * Maps a 1-based ErrorResponse POSITION (characters of the text sent) back to the caller's text.
 * Outside every replaced span the offset moves by the spans before it; inside one it maps to
 * nothing (the position is dropped: it points into text pgwarden wrote).
 */
export class PositionMap {
  constructor(private readonly segments: readonly Segment[]) {}

  /** The caller's 1-based position for `position` of the rewritten text, or undefined. */
  toOriginal(position: number): number | undefined {
    const p = position - 1;
    let delta = 0;
    for (const s of this.segments) {
      if (p < s.toStart) break;
      if (p < s.toEnd) return undefined;
      delta = s.fromEnd - s.toEnd;
    }
    return p + delta + 1;
  }
}

/** Code points of UTF-8 `b` (well-formed): every byte that is not a continuation byte starts one. */
function utf8CodePoints(b: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < b.length; i++) if (((b[i] as number) & 0xc0) !== 0x80) n++;
  return n;
}

function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Applies non-overlapping `edits` to `bytes` (the UTF-8 text). Output: the new text, its UTF-8
 * bytes and the {@link PositionMap}; null when two edits overlap (the caller refuses: fail closed).
 */
export function applyEdits(
  bytes: Buffer,
  edits: readonly Edit[],
): { text: string; bytes: Buffer; positions: PositionMap } | null {
  const sorted = [...edits].sort((a, b) => a.start - b.start || a.end - b.end);
  // The text is assembled as bytes and decoded once: kept stretches are views, not strings (a 60 MB
  // literal was decoded once for its stretch and again for the joined text, issue 16 item 2).
  const parts: Buffer[] = [];
  const segments: Segment[] = [];
  let at = 0;
  let fromChars = 0;
  let toChars = 0;
  for (const e of sorted) {
    if (e.start < at || e.end < e.start) return null;
    const keep = bytes.subarray(at, e.start);
    const keptChars = utf8CodePoints(keep);
    fromChars += keptChars;
    toChars += keptChars;
    parts.push(keep, Buffer.from(e.text, 'utf8'));
    const removed = utf8CodePoints(bytes.subarray(e.start, e.end));
    const added = codePoints(e.text);
    segments.push({
      fromStart: fromChars,
      fromEnd: fromChars + removed,
      toStart: toChars,
      toEnd: toChars + added,
    });
    fromChars += removed;
    toChars += added;
    at = e.end;
  }
  parts.push(bytes.subarray(at));
  const joined = Buffer.concat(parts);
  return { text: joined.toString('utf8'), bytes: joined, positions: new PositionMap(segments) };
}

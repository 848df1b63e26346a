// SASLprep (RFC 4013 over RFC 3454), mirroring PostgreSQL's pg_saslprep (src/common/saslprep.c).

type Ranges = readonly (readonly [number, number])[];

function inRanges(cp: number, ranges: Ranges): boolean {
  for (const [lo, hi] of ranges) {
    if (cp < lo) return false;
    if (cp <= hi) return true;
  }
  return false;
}

/** RFC 3454 table C.1.2, non-ASCII space characters: mapped to U+0020 (RFC 4013 §2.1). */
const NON_ASCII_SPACE: Ranges = [
  [0x00a0, 0x00a0],
  [0x1680, 0x1680],
  [0x2000, 0x200b],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
];

/** RFC 3454 table B.1, "commonly mapped to nothing": removed (RFC 4013 §2.1). */
const MAPPED_TO_NOTHING: Ranges = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x1806, 0x1806],
  [0x180b, 0x180d],
  [0x200b, 0x200d],
  [0x2060, 0x2060],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
];

/**
 * RFC 4013 §2.3 prohibited output: the union of RFC 3454 tables C.1.2, C.2.1, C.2.2, C.3, C.4,
 * C.5, C.6, C.7, C.8 and C.9, adjacent ranges merged.
 */
const PROHIBITED: Ranges = [
  [0x0000, 0x001f], // C.2.1
  [0x007f, 0x00a0], // C.2.1, C.2.2, C.1.2
  [0x0340, 0x0341], // C.8
  [0x06dd, 0x06dd], // C.2.2
  [0x070f, 0x070f], // C.2.2
  [0x1680, 0x1680], // C.1.2
  [0x180e, 0x180e], // C.2.2
  [0x2000, 0x200f], // C.1.2, C.2.2, C.8
  [0x2028, 0x202f], // C.1.2, C.2.2, C.8
  [0x205f, 0x2063], // C.1.2, C.2.2
  [0x206a, 0x206f], // C.2.2, C.8
  [0x2ff0, 0x2ffb], // C.7
  [0x3000, 0x3000], // C.1.2
  [0xd800, 0xf8ff], // C.5, C.3
  [0xfdd0, 0xfdef], // C.4
  [0xfeff, 0xfeff], // C.2.2
  [0xfff9, 0xffff], // C.2.2, C.6, C.4
  [0x1d173, 0x1d17a], // C.2.2
  [0xe0001, 0xe0001], // C.9
  [0xe0020, 0xe007f], // C.9
  [0xf0000, 0x10ffff], // C.3, C.4
];

/** RFC 3454 table D.1: characters of bidirectional category R or AL (Unicode 3.2). */
const RAND_AL_CAT: Ranges = [
  [0x05be, 0x05be],
  [0x05c0, 0x05c0],
  [0x05c3, 0x05c3],
  [0x05d0, 0x05ea],
  [0x05f0, 0x05f4],
  [0x061b, 0x061b],
  [0x061f, 0x061f],
  [0x0621, 0x063a],
  [0x0640, 0x064a],
  [0x066d, 0x066f],
  [0x0671, 0x06d5],
  [0x06dd, 0x06dd],
  [0x06e5, 0x06e6],
  [0x06fa, 0x06fe],
  [0x0700, 0x070d],
  [0x0710, 0x0710],
  [0x0712, 0x072c],
  [0x0780, 0x07a5],
  [0x07b1, 0x07b1],
  [0x200f, 0x200f],
  [0xfb1d, 0xfb1d],
  [0xfb1f, 0xfb28],
  [0xfb2a, 0xfb36],
  [0xfb38, 0xfb3c],
  [0xfb3e, 0xfb3e],
  [0xfb40, 0xfb41],
  [0xfb43, 0xfb44],
  [0xfb46, 0xfbb1],
  [0xfbd3, 0xfd3d],
  [0xfd50, 0xfd8f],
  [0xfd92, 0xfdc7],
  [0xfdf0, 0xfdfc],
  [0xfe70, 0xfe74],
  [0xfe76, 0xfefc],
];

function isNonCharacter(cp: number): boolean {
  // RFC 3454 C.4: U+nFFFE and U+nFFFF in every plane (plane 0 is covered by PROHIBITED).
  return (cp & 0xfffe) === 0xfffe;
}

/** Unassigned code points (RFC 3454 A.1 is Unicode 3.2's list; see saslPrep for the deviation). */
const UNASSIGNED = /^\p{Cn}$/u;
/** Approximates RFC 3454 D.2 (bidirectional category L): letters and spacing marks. */
const LETTER_LIKE = /^[\p{L}\p{Mc}]$/u;

function isLCat(ch: string, cp: number): boolean {
  return !inRanges(cp, RAND_AL_CAT) && LETTER_LIKE.test(ch);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const utf8Strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Prepares a password the way PostgreSQL (server and libpq) does before SCRAM hashes it, and
 * returns the bytes to feed PBKDF2.
 *
 * Input: the password as a string or as raw bytes. Output: a new Buffer.
 * Rules, in PostgreSQL's order (pg_saslprep, src/common/saslprep.c; RFC 4013 §2, RFC 3454 §2):
 * 1. pure ASCII (every byte < 0x80, control characters included) → the bytes unchanged;
 * 2. bytes that are not valid UTF-8 → the bytes unchanged (PostgreSQL's SASLPREP_INVALID_UTF8);
 * 3. map: C.1.2 non-ASCII spaces → U+0020, B.1 characters → removed;
 * 4. NFKC (String.prototype.normalize, the runtime's Unicode version);
 * 5. prohibit: C.1.2–C.9 characters, unassigned code points, and strings that break the
 *    bidirectional rules of RFC 3454 §6; like PostgreSQL this looks at the mapped input of
 *    step 3 (not at the NFKC output), and an empty mapped string is prohibited too;
 * 6. a prohibited string → the original bytes unchanged: PostgreSQL never rejects a password
 *    for SASLprep, it falls back to the raw bytes (SASLPREP_PROHIBITED), so we do the same.
 * Deviations from PostgreSQL, both in rare non-ASCII passwords: "unassigned" means unassigned in
 * the runtime's Unicode version (`\p{Cn}`), whereas PostgreSQL uses Unicode 3.2's table A.1 (a
 * character assigned after 3.2 makes PostgreSQL fall back to the raw bytes; here it does only if
 * NFKC leaves the string unchanged anyway); and bidirectional category L (table D.2) is
 * approximated by "letter or spacing mark that is not R/AL" (table D.1 is exact).
 * Throws TypeError for a string with an unpaired surrogate (it has no UTF-8 encoding).
 */
export function saslPrep(password: string | Buffer): Buffer {
  let text: string;
  let raw: Buffer;
  if (typeof password === 'string') {
    if (LONE_SURROGATE.test(password)) throw new TypeError('password contains an unpaired UTF-16 surrogate');
    text = password;
    raw = Buffer.from(password, 'utf8');
  } else {
    raw = Buffer.from(password);
    try {
      text = utf8Strict.decode(raw);
    } catch {
      return raw;
    }
  }
  if (raw.every((b) => b < 0x80)) return raw;

  let mapped = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (inRanges(cp, NON_ASCII_SPACE)) mapped += ' ';
    else if (!inRanges(cp, MAPPED_TO_NOTHING)) mapped += ch;
  }
  if (mapped === '') return raw;

  const chars = Array.from(mapped);
  let hasRandAL = false;
  let hasL = false;
  for (const ch of chars) {
    const cp = ch.codePointAt(0)!;
    if (inRanges(cp, PROHIBITED) || isNonCharacter(cp) || UNASSIGNED.test(ch)) return raw;
    if (inRanges(cp, RAND_AL_CAT)) hasRandAL = true;
    else if (isLCat(ch, cp)) hasL = true;
  }
  if (hasRandAL) {
    // RFC 3454 §6: no L character at all, and R/AL characters first and last.
    const first = chars[0]!.codePointAt(0)!;
    const last = chars[chars.length - 1]!.codePointAt(0)!;
    if (hasL || !inRanges(first, RAND_AL_CAT) || !inRanges(last, RAND_AL_CAT)) return raw;
  }
  return Buffer.from(mapped.normalize('NFKC'), 'utf8');
}

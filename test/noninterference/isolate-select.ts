// The SELECTs a SQL string holds, each as text of its own: top-level ones, and those inside EXPLAIN, PREPARE, DECLARE, COPY, CREATE TABLE AS / VIEW and INSERT … SELECT.
import { parseSync } from 'libpg-query';

type Obj = Record<string, unknown>;

/** One SELECT found in a statement: its text (parses alone to the same tree) and where it came from. */
export interface IsolatedSelect {
  readonly text: string;
  /** `SelectStmt`, or the statement it was found in (`ExplainStmt`, `InsertStmt`, …). */
  readonly from: string;
}

/** The tree without locations, as JSON: two parses of the same query compare equal. */
function shape(node: unknown): string {
  return JSON.stringify(node, (k, v) =>
    k === 'location' || k === 'stmt_location' || k === 'stmt_len' ? undefined : v,
  );
}

/** The smallest `location` in a tree (a byte offset), or -1. */
function minLocation(node: unknown): number {
  let min = -1;
  const walk = (n: unknown): void => {
    if (Array.isArray(n)) {
      for (const x of n) walk(x);
      return;
    }
    if (!n || typeof n !== 'object') return;
    for (const [k, v] of Object.entries(n as Obj)) {
      if (k === 'location' && typeof v === 'number' && v >= 0) min = min < 0 ? v : Math.min(min, v);
      else walk(v);
    }
  };
  walk(node);
  return min;
}

/** Byte offsets in `bytes[from, to)` where `re` matches (on the latin1 view: ASCII keywords keep their offsets). */
function matches(bytes: Buffer, from: number, to: number, re: RegExp): number[] {
  const s = bytes.subarray(from, to).toString('latin1');
  const out: number[] = [];
  for (const m of s.matchAll(re)) out.push(from + (m.index ?? 0));
  return out;
}

/** The single SelectStmt body `text` parses to, or null. */
function parseOneSelect(text: string): Obj | null {
  try {
    const tree = parseSync(text) as { stmts?: { stmt?: Obj }[] };
    const stmts = tree.stmts ?? [];
    const node = stmts.length === 1 ? stmts[0]?.stmt : undefined;
    return (node?.SelectStmt as Obj | undefined) ?? null;
  } catch {
    return null;
  }
}

/**
 * The text of the SelectStmt `inner` within `bytes[start, end)`: it starts at a keyword or
 * parenthesis before its first located token and ends at `end` or before ON CONFLICT /
 * RETURNING; the candidate that parses alone to the same tree is it. Null when none does.
 */
function isolate(bytes: Buffer, inner: Obj, start: number, end: number): string | null {
  const first = minLocation(inner);
  if (first < 0) return null;
  const want = shape(inner);
  const starts = matches(bytes, start, first + 1, /\(|\b(select|values|with|table)\b/gi).reverse();
  const ends = [end, ...matches(bytes, first, end, /\b(on\s+conflict|returning)\b/gi)];
  for (const s of starts) {
    for (const e of ends) {
      const text = bytes.subarray(s, e).toString('utf8').trim();
      const got = parseOneSelect(text);
      if (got && shape(got) === want) return text;
    }
  }
  return null;
}

/** Where a statement kind keeps the query it is built around. */
function innerQuery(kind: string, body: Obj): unknown {
  if (kind === 'ExplainStmt' || kind === 'PrepareStmt' || kind === 'DeclareCursorStmt') return body.query;
  if (kind === 'CopyStmt' || kind === 'CreateTableAsStmt' || kind === 'ViewStmt') return body.query;
  // INSERT … SELECT: its own WITH would be left behind, so only without one.
  if (kind === 'InsertStmt' && !body.withClause) return body.selectStmt;
  return undefined;
}

/**
 * Every SELECT `sql` holds that can stand alone: each top-level SELECT (not SELECT INTO) and the
 * query of EXPLAIN, PREPARE, DECLARE CURSOR, COPY (query), CREATE TABLE AS / VIEW and INSERT …
 * SELECT (without a WITH of its own). Nothing for a string that does not parse.
 */
export function isolateSelects(sql: string): IsolatedSelect[] {
  let tree: { stmts?: { stmt?: Obj; stmt_location?: number; stmt_len?: number }[] };
  try {
    tree = parseSync(sql);
  } catch {
    return [];
  }
  const bytes = Buffer.from(sql, 'utf8');
  const out: IsolatedSelect[] = [];
  for (const st of tree.stmts ?? []) {
    const [kind, raw] = Object.entries(st.stmt ?? {})[0] ?? [];
    if (!kind || !raw || typeof raw !== 'object') continue;
    const body = raw as Obj;
    const start = st.stmt_location ?? 0;
    const end = st.stmt_len ? start + st.stmt_len : bytes.length;
    if (kind === 'SelectStmt') {
      if (!body.intoClause)
        out.push({ text: bytes.subarray(start, end).toString('utf8').trim(), from: kind });
      continue;
    }
    const inner = innerQuery(kind, body) as Obj | undefined;
    const sel = inner?.SelectStmt as Obj | undefined;
    if (!sel || sel.intoClause) continue;
    const text = isolate(bytes, sel, start, end);
    if (text) out.push({ text, from: kind });
  }
  return out;
}

// A key for "the same statement with other literals": the parse tree with literal values blanked where no analysis depends on them.

import type { ParsedSql } from './parser.js';

/** Top-level node types whose analysis may be shared between texts differing only in literals. */
const SHAREABLE: ReadonlySet<string> = new Set([
  'SelectStmt',
  'InsertStmt',
  'UpdateStmt',
  'DeleteStmt',
  'MergeStmt',
]);

/** Subtrees where a literal's value changes the analysis: ordinals (`ORDER BY 2`), and function arguments. */
const KEEP_LITERALS_UNDER: ReadonlySet<string> = new Set(['sortClause', 'groupClause', 'distinctClause']);

/**
 * The type a literal gets from its kind alone (Postgres's make_const): integer, int8 or numeric for
 * a number (a Float node holding an integer that fits in 64 bits is int8), unknown for a string,
 * boolean, bit string, or NULL. Two literals of one class resolve functions and operators alike.
 */
function literalClass(c: Record<string, unknown>): string {
  if (c.isnull === true) return 'n';
  if ('ival' in c) return 'i';
  if ('fval' in c) {
    const f = (c.fval as { fval?: string }).fval ?? '';
    if (/^-?\d+$/.test(f)) {
      try {
        const v = BigInt(f);
        if (v >= -(2n ** 63n) && v < 2n ** 63n) return 'f8';
      } catch {
        // not an integer: numeric
      }
    }
    return 'fn';
  }
  if ('sval' in c) return 's';
  if ('boolval' in c) return 'b';
  if ('bsval' in c) return `x${((c.bsval as { bsval?: string }).bsval ?? '').charAt(0)}`;
  return '?';
}

/** Whether a TypeCast names a reg* type (`'users'::regclass`): its literal names a catalog object. */
function castsToRegType(fields: Record<string, unknown>): boolean {
  const names = ((fields.typeName as { names?: unknown[] } | undefined)?.names ?? []) as {
    String?: { sval?: string };
  }[];
  const last = names[names.length - 1]?.String?.sval ?? '';
  return last.startsWith('reg');
}

function serialize(v: unknown, keep: boolean, out: string[]): void {
  if (v === null || typeof v !== 'object') {
    out.push(JSON.stringify(v ?? null));
    return;
  }
  if (Array.isArray(v)) {
    out.push('[');
    for (const x of v) {
      serialize(x, keep, out);
      out.push(',');
    }
    out.push(']');
    return;
  }
  const obj = v as Record<string, unknown>;
  out.push('{');
  for (const k of Object.keys(obj)) {
    const child = obj[k];
    out.push(k, ':');
    if (k === 'A_Const' && !keep && child && typeof child === 'object') {
      const c = child as Record<string, unknown>;
      out.push(`#${literalClass(c)}@${String(c.location)}`);
    } else if (
      k === 'FuncCall' ||
      (k === 'TypeCast' && castsToRegType((child ?? {}) as Record<string, unknown>))
    ) {
      serialize(child, true, out);
    } else {
      serialize(child, keep || KEEP_LITERALS_UNDER.has(k), out);
    }
    out.push(',');
  }
  out.push('}');
}

/**
 * The normalized key of a parsed string, or null when its analysis may not be shared.
 * Input: the parsed string. Output: the parse tree serialized with every literal replaced by its
 * class and location (`#i@48`), plus the text length — or null.
 *
 * Why the cached Analysis is valid for every text with the same key: the tree is the same node for
 * node (same identifiers, structure, literal classes and every byte location, statement locations
 * and lengths included), so every location in the analysis is the same; the text is ASCII (byte
 * offsets are character offsets, so conversions agree); and literal values are kept wherever the
 * analysis reads one — ordinals in ORDER BY / GROUP BY / DISTINCT ON, reg* casts
 * (`'users'::regclass`), and function arguments (`set_config('search_path', …)`, `nextval('s')`).
 * Only the five row statements share (SET and every other statement kind read their literals).
 * The caller must also refuse to share analyses with session effects or refusals.
 * Source: DESIGN.md "`Analysis` depends only on (SQL text, search_path, catalog version)".
 */
export function normalizedKey(parsed: ParsedSql): string | null {
  if (!parsed.offsets.ascii || parsed.statements.length === 0) return null;
  for (const st of parsed.statements) {
    if (!SHAREABLE.has(st.nodeType)) return null;
    if (st.nodeType === 'SelectStmt' && (st.node as { intoClause?: unknown }).intoClause !== undefined)
      return null;
  }
  // set_config reads literals outside its own arguments too (pg_dump's `set_config(name, …)
  // FROM pg_settings WHERE name = '<setting>'` takes the setting from the WHERE literal): a
  // statement calling it is never shared (attack corpus 4).
  if (callsSetConfig(parsed.tree.stmts ?? [])) return null;
  const out: string[] = [String(parsed.text.length), '|'];
  serialize(parsed.tree.stmts ?? [], false, out);
  return out.join('');
}

/** True when any FuncCall in `tree` is named set_config (qualified or not). */
function callsSetConfig(tree: unknown): boolean {
  const stack: unknown[] = [tree];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      stack.push(...v);
      continue;
    }
    const o = v as Record<string, unknown>;
    const call = o.FuncCall as { funcname?: { String?: { sval?: string } }[] } | undefined;
    if (call) {
      const names = call.funcname ?? [];
      if (names[names.length - 1]?.String?.sval === 'set_config') return true;
    }
    for (const k in o) stack.push(o[k]);
  }
  return false;
}

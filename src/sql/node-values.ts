// Reading libpg-query parse-tree values: constants, identifier strings, and a generic walk.

/** A constant's value as text: null for the NULL constant, undefined when the node is no constant. */
export type ConstText = string | null | undefined;

/**
 * The text of a constant node, as Postgres would hand it to a text parameter. Input: a node wrapper
 * (`{ A_Const: … }`, or `{ TypeCast: { arg: { A_Const } } }` such as `'search_path'::text`).
 * Output: the value (`1` for an integer, `true`/`false` for a boolean), null for NULL, undefined
 * for anything that is not a constant (a column, a parameter, an expression).
 */
export function constText(wrapper: unknown): ConstText {
  if (wrapper === null || typeof wrapper !== 'object') return undefined;
  const w = wrapper as Record<string, unknown>;
  if ('TypeCast' in w) return constText((w.TypeCast as { arg?: unknown }).arg);
  const c = w.A_Const as Record<string, unknown> | undefined;
  if (!c) return undefined;
  if (c.isnull === true) return null;
  if (c.sval) return (c.sval as { sval?: string }).sval ?? '';
  if (c.ival) return String((c.ival as { ival?: number }).ival ?? 0);
  if ('ival' in c) return '0';
  if (c.fval) return (c.fval as { fval?: string }).fval ?? '0';
  if (c.boolval) return (c.boolval as { boolval?: boolean }).boolval ? 'true' : 'false';
  if ('boolval' in c) return 'false';
  if (c.bsval) return (c.bsval as { bsval?: string }).bsval ?? '';
  // An absent value field in libpg-query's JSON is a zero / empty value of that kind.
  return undefined;
}

/** The names of a list of `{ String: { sval } }` nodes (funcname, names, fields). */
export function stringList(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((n) => ((n as { String?: { sval?: string } }).String?.sval ?? '') as string);
}

/**
 * Calls `visit(type, fields)` for every node wrapper `{ Type: fields }` under `root`, depth first,
 * parents before children. `visit` returning false skips the node's children.
 */
export function walkNodes(
  root: unknown,
  visit: (type: string, fields: Record<string, unknown>) => boolean | undefined,
): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
      continue;
    }
    const obj = v as Record<string, unknown>;
    const keys = Object.keys(obj);
    const first = keys[0];
    // A node wrapper has one key naming a type that starts with an upper-case letter.
    if (keys.length === 1 && first !== undefined && /^[A-Z]/.test(first)) {
      const fields = obj[first];
      if (fields !== null && typeof fields === 'object' && !Array.isArray(fields)) {
        if (visit(first, fields as Record<string, unknown>) === false) continue;
        stack.push(fields);
        continue;
      }
    }
    for (let i = keys.length - 1; i >= 0; i--) stack.push(obj[keys[i] as string]);
  }
}

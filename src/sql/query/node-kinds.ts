// Node kinds of the libpg-query 15 JSON tree: names, unwrapping, and the expression/non-expression split.
import type { Node } from 'libpg-query';
import { unsupported } from './errors.js';

/** Every node name libpg-query 15 can emit (the keys of its `Node` union). */
export type NodeName = Node extends infer U ? (U extends unknown ? keyof U : never) : never;

/** A JSON object from the parse tree. Absent fields mean zero/false/empty (protobuf JSON). */
export type Obj = Record<string, unknown>;

/**
 * Splits a wrapped node `{ Kind: body }` into its kind and body.
 * Throws 0A000 when the value is not a one-key wrapped node.
 */
export function unwrap(node: unknown, location?: number): [NodeName, Obj] {
  if (node && typeof node === 'object') {
    const keys = Object.keys(node);
    if (keys.length === 1) {
      const k = keys[0] as NodeName;
      const body = (node as Obj)[k];
      if (body && typeof body === 'object') return [k, body as Obj];
    }
  }
  return unsupported('a malformed parse node', location);
}

/** Field accessors tolerant of absent fields. */
export function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
export function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}
export function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}
export function loc(o: Obj): number {
  return typeof o.location === 'number' ? o.location : -1;
}
export function obj(v: unknown): Obj | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** The `sval` of a `{ String: { sval } }` node (names in lists), or throws 0A000. */
export function stringValue(node: unknown): string {
  const [k, b] = unwrap(node);
  if (k !== 'String') return unsupported(`a ${k} where a name was expected`);
  return str(b.sval);
}

/** Names of a `[{String}, …]` list (funcname, typeName.names, colnames). */
export function names(v: unknown): string[] {
  return list(v).map(stringValue);
}

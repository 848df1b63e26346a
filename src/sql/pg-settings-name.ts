// The one non-constant set_config name pgwarden reads: `name` of pg_settings filtered to one constant (pg_dump 15).
import { constText, stringList } from './node-values.js';

type Fields = Record<string, unknown>;

function fieldsOf(wrapper: unknown, type: string): Fields | undefined {
  if (wrapper === null || typeof wrapper !== 'object' || Array.isArray(wrapper)) return undefined;
  const w = wrapper as Record<string, unknown>;
  const keys = Object.keys(w);
  if (keys.length !== 1 || keys[0] !== type) return undefined;
  const f = w[type];
  return f !== null && typeof f === 'object' && !Array.isArray(f) ? (f as Fields) : undefined;
}

/** Whether a ColumnRef is `name` or `pg_settings.name`. */
function isNameColumn(wrapper: unknown): boolean {
  const f = fieldsOf(wrapper, 'ColumnRef');
  if (!f || !Array.isArray(f.fields) || !f.fields.every((x) => fieldsOf(x, 'String'))) return false;
  const parts = stringList(f.fields);
  return (
    (parts.length === 1 && parts[0] === 'name') ||
    (parts.length === 2 && parts[0] === 'pg_settings' && parts[1] === 'name')
  );
}

/** SelectStmt fields that must be absent for the shape: anything that could run the call other than once. */
const OTHER_CLAUSES = [
  'withClause',
  'groupClause',
  'havingClause',
  'windowClause',
  'distinctClause',
  'sortClause',
  'limitCount',
  'limitOffset',
  'lockingClause',
  'valuesLists',
  'larg',
  'rarg',
  'intoClause',
];

/**
 * The setting name a set_config call's first argument stands for when the statement has exactly
 * pg_dump 15's shape
 * `SELECT set_config(name, '<value>', <bool>) FROM pg_settings WHERE name = '<constant>'`:
 * one FROM item, the catalog view pg_settings (unqualified or `pg_catalog.`-qualified, unaliased,
 * not ONLY-decorated) that the query analysis resolved to `pg_catalog.pg_settings`
 * (`readsPgSettings`), a WHERE that is exactly `name = '<constant>'` (`name` or
 * `pg_settings.name`), nothing else in the statement, and the call standing directly in the
 * select list. pg_settings has one row per setting name, so the call runs at most once, with
 * `<constant>` as its name (or not at all when no such setting exists).
 * Input: the statement's node type and fields, the call's FuncCall fields, and whether the
 * statement reads pg_catalog.pg_settings (and no other relation).
 * Output: the constant, or undefined for any other shape (the caller refuses it 0A000).
 * Source: pg_dump.c setup_connection (15.8+, restrict_nonsystem_relation_kind).
 */
export function pgSettingsName(
  nodeType: string,
  node: unknown,
  call: Fields,
  readsPgSettings: boolean,
): string | undefined {
  if (!readsPgSettings || nodeType !== 'SelectStmt' || node === null || typeof node !== 'object')
    return undefined;
  const s = node as Fields;
  if (OTHER_CLAUSES.some((k) => s[k] !== undefined)) return undefined;
  if (s.op !== undefined && s.op !== 'SETOP_NONE') return undefined;
  const args = Array.isArray(call.args) ? call.args : [];
  if (!isNameColumn(args[0])) return undefined;
  const targets = Array.isArray(s.targetList) ? s.targetList : [];
  const inList = targets.some((t) => {
    const val = fieldsOf(t, 'ResTarget')?.val;
    return fieldsOf(val, 'FuncCall') === call;
  });
  if (!inList) return undefined;
  const from = Array.isArray(s.fromClause) ? s.fromClause : [];
  const rv = from.length === 1 ? fieldsOf(from[0], 'RangeVar') : undefined;
  if (rv?.relname !== 'pg_settings' || rv.alias !== undefined || rv.catalogname) return undefined;
  if (rv.schemaname !== undefined && rv.schemaname !== 'pg_catalog') return undefined;
  if (rv.inh === false) return undefined;
  const where = fieldsOf(s.whereClause, 'A_Expr');
  if (where?.kind !== 'AEXPR_OP') return undefined;
  const op = stringList(where.name);
  if (op.length !== 1 || op[0] !== '=') return undefined;
  if (!isNameColumn(where.lexpr)) return undefined;
  const value = constText(where.rexpr);
  return typeof value === 'string' ? value : undefined;
}

// A cast to the type a column already has: Postgres keeps the column reference, so its origin survives.
import type { ColumnOrigin } from '../analysis-types.js';
import { resolveColumnRef } from './column-ref.js';
import type { Env } from './expression.js';
import { list, loc, names, type Obj, obj, unwrap } from './node-kinds.js';

/** Type names as written in a cast, mapped to format_type's spelling (the catalog's typeName). */
const SPELLINGS: Record<string, string> = {
  int: 'integer',
  int4: 'integer',
  integer: 'integer',
  int8: 'bigint',
  bigint: 'bigint',
  int2: 'smallint',
  smallint: 'smallint',
  text: 'text',
  varchar: 'character varying',
  bpchar: 'character',
  bool: 'boolean',
  boolean: 'boolean',
  float8: 'double precision',
  float4: 'real',
  numeric: 'numeric',
  timestamptz: 'timestamp with time zone',
  timestamp: 'timestamp without time zone',
  date: 'date',
  uuid: 'uuid',
  json: 'json',
  jsonb: 'jsonb',
  name: 'name',
  oid: 'oid',
  float: 'double precision',
  decimal: 'numeric',
  char: 'character',
  character: 'character',
  time: 'time without time zone',
  timetz: 'time with time zone',
  varbit: 'bit varying',
  interval: 'interval',
};

/**
 * format_type's spelling of a type name as written (`int4`, `pg_catalog.regproc`, `text[]`), or
 * null when it may not name the built-in type (a schema other than pg_catalog). A name without a
 * listed spelling is its own (regproc, regtype, xid, inet, …: format_type prints them as is).
 */
function writtenType(tn: Record<string, unknown>): string | null {
  const tnames = names(tn.names);
  if (tnames.length > 2 || (tnames.length === 2 && tnames[0] !== 'pg_catalog')) return null;
  const last = tnames[tnames.length - 1];
  if (!last) return null;
  const base = SPELLINGS[last] ?? last;
  return `${base}${'[]'.repeat(list(tn.arrayBounds).length)}`;
}

/**
 * The RowDescription origin of `col::type` when the cast changes nothing (same type, no type
 * modifier): Postgres's coerce_type returns the column reference itself, and
 * markTargetListOrigins reports its table and attnum. Null for any other expression. The use
 * stays a `compute` (a cast), only the predicted origin follows Postgres.
 */
export function noOpCastOrigin(env: Env, val: unknown): ColumnOrigin | null {
  const [k, b] = unwrap(val);
  if (k !== 'TypeCast') return null;
  const tn = obj(b.typeName);
  if (!tn || list(tn.typmods).length > 0) return null;
  const target = writtenType(tn);
  const arg = obj(b.arg);
  if (!target || !arg || !('ColumnRef' in arg)) return null;
  const ref = obj(arg.ColumnRef) as Obj;
  const r = resolveColumnRef(env.scope, ref, loc(ref));
  if (r.kind !== 'column' || r.column.lineage.sources.length !== 1) return null;
  const src = r.column.lineage.sources[0];
  const rel = src ? env.state.catalog.relations.get(`${src.schema}.${src.table}`) : undefined;
  const col = rel?.columns.find((c) => c.name === src?.column);
  // A column with a type modifier (numeric(12,2), varchar(10)) cast to its bare type gets a
  // RelabelType exposing the new typmod (coerce_type_typmod): no origin then.
  if (!col || col.typeName !== target) return null;
  return r.column.lineage.origin;
}

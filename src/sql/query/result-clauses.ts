// GROUP BY, ORDER BY, DISTINCT [ON]: Postgres's rules for ordinals, output names and input names.
import type { TestClause } from '../analysis-types.js';
import { localColumn } from './column-ref.js';
import { QueryRefusal, unsupported } from './errors.js';
import { type Env, walkExpr } from './expression.js';
import { consume } from './lineage.js';
import { list, loc, type Obj, str, unwrap } from './node-kinds.js';
import type { OutColumn } from './target-list.js';

/** The 1-based ordinal an integer constant names, else null. */
function ordinal(node: unknown): number | null {
  const [k, b] = unwrap(node);
  if (k !== 'A_Const') return null;
  const iv = b.ival as Obj | undefined;
  if (!iv) return null;
  return typeof iv.ival === 'number' ? iv.ival : 0;
}

/** A bare one-part column name, else null. */
function bareName(node: unknown): string | null {
  const [k, b] = unwrap(node);
  if (k !== 'ColumnRef') return null;
  const fields = list(b.fields);
  if (fields.length !== 1) return null;
  const [fk, fb] = unwrap(fields[0]);
  return fk === 'String' ? str(fb.sval) : null;
}

function byOrdinal(
  env: Env,
  out: readonly OutColumn[],
  n: number,
  clause: TestClause,
  location: number,
): void {
  const c = out[n - 1];
  if (!c) throw new QueryRefusal('42P10', `${clause} position ${n} is not in select list`, location);
  consume(env.state, c.lineage, { kind: 'test', clause }, location);
}

/**
 * One ORDER BY or DISTINCT ON item (SQL92 rules, findTargetlistEntrySQL92): an integer names a
 * result column; a bare name is a result column first, then an input column; anything else is an
 * expression over input columns. Every column it reaches is a test in `clause`.
 * Throws 42P10 for an ordinal out of range, 42702 for a name two result columns carry.
 */
export function sortItem(env: Env, out: readonly OutColumn[], node: unknown, clause: TestClause): void {
  const [, b] = unwrap(node);
  const location = loc(b);
  const n = ordinal(node);
  if (n !== null) return byOrdinal(env, out, n, clause, location);
  const name = bareName(node);
  if (name !== null) {
    const hits = out.filter((c) => c.name === name);
    if (hits.length > 1) throw new QueryRefusal('42702', `${clause} "${name}" is ambiguous`, location);
    const hit = hits[0];
    if (hit) return consume(env.state, hit.lineage, { kind: 'test', clause }, location);
  }
  walkExpr(env, node, { kind: 'test', clause });
}

/**
 * One GROUP BY item: an integer names a result column; a bare name is an input column of this
 * level first, then a result column, and only then an outer query's column (Postgres 7.4.3's
 * rule in findTargetlistEntrySQL92: `GROUP BY x` where x is an output alias here and a column of
 * an outer query groups by the alias); grouping sets, ROLLUP and CUBE recurse.
 * Throws 0A000 when only a function whose columns the catalog does not describe could hold the
 * name and a result column carries it too (pgwarden cannot tell which Postgres groups by).
 */
export function groupItem(env: Env, out: readonly OutColumn[], node: unknown): void {
  const [k, b] = unwrap(node);
  if (k === 'GroupingSet') {
    for (const c of list(b.content)) groupItem(env, out, c);
    return;
  }
  const location = loc(b);
  const n = ordinal(node);
  if (n !== null) return byOrdinal(env, out, n, 'GROUP BY', location);
  const name = bareName(node);
  const local = name === null ? 'yes' : localColumn(env.scope, name, location);
  if (name !== null && local !== 'yes') {
    const hit = out.find((c) => c.name === name);
    if (hit && local === 'maybe')
      unsupported(`GROUP BY ${name}: it may be a column of a function in FROM or a result column`, location);
    if (hit) return consume(env.state, hit.lineage, { kind: 'test', clause: 'GROUP BY' }, location);
  }
  walkExpr(env, node, { kind: 'test', clause: 'GROUP BY' });
}

/**
 * ORDER BY of a set operation or VALUES: only result column names and ordinals are allowed
 * (Postgres: 0A000 for anything else).
 */
export function resultOnlySortItem(env: Env, out: readonly OutColumn[], node: unknown): void {
  const [, b] = unwrap(node);
  const inner = (b as Obj).node ?? node;
  const n = ordinal(inner);
  if (n !== null) return byOrdinal(env, out, n, 'ORDER BY', loc(b));
  const name = bareName(inner);
  const hit = name === null ? undefined : out.find((c) => c.name === name);
  if (!hit) {
    throw new QueryRefusal(
      '0A000',
      'invalid UNION/INTERSECT/EXCEPT ORDER BY clause: only result column names can be used',
      loc(b),
    );
  }
  consume(env.state, hit.lineage, { kind: 'test', clause: 'ORDER BY' }, loc(b));
}

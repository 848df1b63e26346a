// Grant sync: what a role holds now (aclexplode over relacl, attacl, nspacl), the difference to a plan, applied as SQL.
import pg from 'pg';
import type { Catalog } from '../catalog/types.js';
import { type PrivilegeKey, schemaKey } from './grant-plan.js';

/** A relation by OID, as a GRANT names it. */
interface RelationName {
  readonly schema: string;
  readonly name: string;
  /** pg_class.relkind: `S` takes `ON SEQUENCE`. */
  readonly relkind: string;
}

/** What one role holds now: its privilege keys, and the names of the relations they are on. */
export interface HeldPrivileges {
  readonly keys: Set<PrivilegeKey>;
  readonly relations: Map<number, RelationName>;
}

/** Relations and schemas a read of held privileges is limited to (an incremental sync's scope). */
export interface HeldScope {
  readonly relations: readonly number[];
  readonly schemas: readonly string[];
}

/**
 * Reads every privilege `role` (by OID) holds directly in the current database: relation ACLs
 * (`pg_class.relacl`), column ACLs (`pg_attribute.attacl`, dropped columns left out) and schema ACLs
 * (`pg_namespace.nspacl`), each exploded with `aclexplode`, whatever the grantor (PostgreSQL 15 docs
 * 9.26 "aclexplode"). Output: keys in {@link PrivilegeKey} form.
 */
export async function readHeldPrivileges(client: pg.ClientBase, roleOid: number): Promise<HeldPrivileges> {
  return (await readHeldPrivilegesOf(client, [roleOid])).get(roleOid) as HeldPrivileges;
}

/**
 * {@link readHeldPrivileges} for several roles in one query (an entry for each of `roleOids`, empty
 * when it holds nothing), limited to the relations and schemas of `scope` when given.
 */
export async function readHeldPrivilegesOf(
  client: pg.ClientBase,
  roleOids: readonly number[],
  scope?: HeldScope,
): Promise<Map<number, HeldPrivileges>> {
  const r = await client.query<HeldRow>(heldPrivilegesSql(oidArray(roleOids), scope));
  return heldFromRows(r.rows, roleOids);
}

/** A row of {@link heldPrivilegesSql}: grantee (int8 as text), kind (T, C, N), relation, column, privilege. */
export interface HeldRow {
  g: string;
  k: string;
  oid: string | null;
  nspname: string | null;
  relname: string | null;
  relkind: string | null;
  attname: string | null;
  priv: string;
}

/**
 * The query of {@link readHeldPrivilegesOf} with its values as literals (it can run in a message
 * of several statements): the privileges held by the roles of `grantees`, an `oid[]` SQL expression
 * (from {@link oidArray}, or one that reads pg_roles), within `scope` when given.
 */
export function heldPrivilegesSql(grantees: string, scope?: HeldScope): string {
  const rel = scope ? `c.oid = ANY (${oidArray(scope.relations)})` : 'true';
  const nsp = scope ? `n.nspname = ANY (${textArray(scope.schemas)})` : 'true';
  return `SELECT a.grantee::int8 AS g, 'T' AS k, c.oid::int8 AS oid, n.nspname, c.relname, c.relkind::text AS relkind, NULL::text AS attname, a.privilege_type AS priv
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) a
      WHERE a.grantee = ANY (${grantees}) AND ${rel}
     UNION ALL
     SELECT a.grantee::int8, 'C', c.oid::int8, n.nspname, c.relname, c.relkind::text, att.attname::text, a.privilege_type
       FROM pg_attribute att JOIN pg_class c ON c.oid = att.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace,
            aclexplode(att.attacl) a
      WHERE a.grantee = ANY (${grantees}) AND NOT att.attisdropped AND ${rel.replace('c.oid', 'att.attrelid')}
     UNION ALL
     SELECT a.grantee::int8, 'N', NULL, n.nspname, NULL, NULL, NULL, a.privilege_type
       FROM pg_namespace n, aclexplode(n.nspacl) a WHERE a.grantee = ANY (${grantees}) AND ${nsp}`;
}

/** What each of `roleOids` holds, from the rows of {@link heldPrivilegesSql} (an entry for each, empty when it holds nothing). */
export function heldFromRows(
  rows: readonly HeldRow[],
  roleOids: Iterable<number>,
): Map<number, HeldPrivileges> {
  const out = new Map<number, HeldPrivileges>();
  for (const oid of roleOids) out.set(oid, { keys: new Set(), relations: new Map() });
  for (const row of rows) {
    const held = out.get(Number(row.g));
    if (!held) continue;
    if (row.k === 'N') {
      held.keys.add(`N|${row.nspname}|${row.priv}`);
      continue;
    }
    const oid = Number(row.oid);
    held.relations.set(oid, {
      schema: row.nspname ?? '',
      name: row.relname ?? '',
      relkind: row.relkind ?? 'r',
    });
    held.keys.add(row.k === 'T' ? `T|${oid}|${row.priv}` : `C|${oid}|${row.attname}|${row.priv}`);
  }
  return out;
}

/** `'{1,2,3}'::oid[]`, a literal of OIDs (validated: the text goes into SQL). Throws an Error for one that is not an OID. */
export function oidArray(oids: readonly number[]): string {
  for (const x of oids) if (!Number.isSafeInteger(x) || x < 0) throw new Error(`not an OID: ${x}`);
  return `'{${oids.join(',')}}'::oid[]`;
}

/** `ARRAY['a', 'b']::text[]`, each element quoted as a literal (pg.escapeLiteral). */
export function textArray(xs: readonly string[]): string {
  return `ARRAY[${xs.map((x) => pg.escapeLiteral(x)).join(', ')}]::text[]`;
}

/**
 * For each table OID, the sequences its column defaults call (pg_depend of pg_attrdef rows on
 * sequences: `nextval('s'::regclass)`, serial columns), of every table or of `tables` only.
 * Identity columns need no privilege.
 */
export async function readDefaultSequences(
  client: pg.ClientBase,
  tables?: readonly number[],
): Promise<Map<number, number[]>> {
  return defaultsFromRows((await client.query<DefaultsRow>(defaultSequencesSql(tables))).rows);
}

/** A row of {@link defaultSequencesSql}: a table and the sequences its defaults call (int8 as text). */
export interface DefaultsRow {
  rel: string;
  seqs: string[];
}

/** The query of {@link readDefaultSequences}, `tables` as a literal. */
export function defaultSequencesSql(tables?: readonly number[]): string {
  return `SELECT ad.adrelid::int8 AS rel, array_agg(DISTINCT d.refobjid::int8) AS seqs
       FROM pg_attrdef ad
       JOIN pg_depend d ON d.classid = 'pg_attrdef'::regclass AND d.objid = ad.oid AND d.refclassid = 'pg_class'::regclass
       JOIN pg_class s ON s.oid = d.refobjid AND s.relkind = 'S'
      WHERE ${tables ? `ad.adrelid = ANY (${oidArray(tables)})` : 'true'}
      GROUP BY ad.adrelid`;
}

/** The map of {@link readDefaultSequences} from the rows of {@link defaultSequencesSql}. */
export function defaultsFromRows(rows: readonly DefaultsRow[]): Map<number, number[]> {
  return new Map(rows.map((x) => [Number(x.rel), x.seqs.map(Number)]));
}

/**
 * The relation OIDs on which the current login cannot grant everything pgwarden may grant, each with
 * the privileges it lacks (`SELECT`, `INSERT`, `UPDATE`, `DELETE`, or `USAGE` for a sequence): neither
 * ownership (membership in the owner role) nor the grant option; and the schemas it cannot grant USAGE
 * on. Schemas for which `unmanaged` is true (isUnmanagedSchema) are left out. With `only`, only
 * those relations are read (the schemas always).
 */
export async function readUngrantable(
  client: pg.ClientBase,
  unmanaged: (schema: string) => boolean,
  only?: readonly number[],
): Promise<Ungrantable> {
  const [relations, schemas] = (await client.query(ungrantableSql(only))) as unknown as pg.QueryResult[];
  return ungrantableFromRows(
    (relations?.rows ?? []) as UngrantableRow[],
    (schemas?.rows ?? []) as { nspname: string }[],
    unmanaged,
  );
}

/** A row of the first query of {@link ungrantableSql}. */
export interface UngrantableRow {
  oid: string;
  nspname: string;
  relname: string;
  missing: string[];
}

/** The two queries of {@link readUngrantable} (relations, then schemas), `only` as a literal: two result sets. */
export function ungrantableSql(only?: readonly number[]): string {
  return `SELECT c.oid::int8 AS oid, n.nspname, c.relname,
            array_remove(CASE WHEN c.relkind = 'S' THEN
              ARRAY[CASE WHEN NOT has_sequence_privilege(c.oid, 'USAGE WITH GRANT OPTION') THEN 'USAGE' END]
            ELSE ARRAY[
              CASE WHEN NOT has_table_privilege(c.oid, 'SELECT WITH GRANT OPTION') THEN 'SELECT' END,
              CASE WHEN c.relkind <> 'm' AND NOT has_table_privilege(c.oid, 'INSERT WITH GRANT OPTION') THEN 'INSERT' END,
              CASE WHEN c.relkind <> 'm' AND NOT has_table_privilege(c.oid, 'UPDATE WITH GRANT OPTION') THEN 'UPDATE' END,
              CASE WHEN c.relkind <> 'm' AND NOT has_table_privilege(c.oid, 'DELETE WITH GRANT OPTION') THEN 'DELETE' END]
            END, NULL) AS missing
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND ${only ? `c.oid = ANY (${oidArray(only)})` : 'true'};
    SELECT nspname FROM pg_namespace WHERE NOT has_schema_privilege(oid, 'USAGE WITH GRANT OPTION')`;
}

/** The {@link Ungrantable} of the two result sets of {@link ungrantableSql}. */
export function ungrantableFromRows(
  rows: readonly UngrantableRow[],
  schemaRows: readonly { nspname: string }[],
  unmanaged: (schema: string) => boolean,
): Ungrantable {
  const relations = new Map<number, { schema: string; name: string; missing: string[] }>();
  for (const row of rows) {
    if (unmanaged(row.nspname) || row.missing.length === 0) continue;
    relations.set(Number(row.oid), { schema: row.nspname, name: row.relname, missing: row.missing });
  }
  const schemas = new Set(schemaRows.map((x) => x.nspname).filter((x) => !unmanaged(x)));
  return { relations, schemas };
}

function parseKey(key: PrivilegeKey): {
  kind: string;
  oid: number;
  schema: string;
  column: string;
  priv: string;
} {
  const parts = key.split('|');
  const kind = parts[0] ?? '';
  if (kind === 'N') return { kind, oid: 0, schema: parts[1] ?? '', column: '', priv: parts[2] ?? '' };
  const priv = parts[parts.length - 1] ?? '';
  // A column name may itself hold `|`: everything between the OID and the privilege.
  const column = kind === 'C' ? parts.slice(2, -1).join('|') : '';
  return { kind, oid: Number(parts[1]), schema: '', column, priv };
}

/**
 * The GRANT and REVOKE statements that take `role` from `held` to exactly `desired` (revokes first;
 * a relation-level REVOKE also takes the column privileges of that kind). Relations are named from
 * `catalog` or, for one only `held` knows, from `held.relations`. Output: SQL statements, in order.
 * Pure.
 */
export function grantDiff(
  role: string,
  held: HeldPrivileges,
  desired: ReadonlySet<PrivilegeKey>,
  catalog?: Catalog,
): string[] {
  const names = new Map<number, RelationName>(held.relations);
  for (const rel of catalog?.relations.values() ?? [])
    names.set(rel.oid, { schema: rel.schema, name: rel.name, relkind: rel.kind === 'sequence' ? 'S' : 'r' });
  const who = pg.escapeIdentifier(role);
  const on = (oid: number): string | undefined => {
    const n = names.get(oid);
    if (!n) return undefined;
    const q = `${pg.escapeIdentifier(n.schema)}.${pg.escapeIdentifier(n.name)}`;
    return n.relkind === 'S' ? `SEQUENCE ${q}` : `TABLE ${q}`;
  };
  const statement = (verb: 'GRANT' | 'REVOKE', key: PrivilegeKey): string | undefined => {
    const k = parseKey(key);
    const to = verb === 'GRANT' ? 'TO' : 'FROM';
    if (k.kind === 'N') return `${verb} ${k.priv} ON SCHEMA ${pg.escapeIdentifier(k.schema)} ${to} ${who}`;
    const target = on(k.oid);
    if (!target) return undefined;
    if (k.kind === 'T') return `${verb} ${k.priv} ON ${target} ${to} ${who}`;
    return `${verb} ${k.priv} (${pg.escapeIdentifier(k.column)}) ON ${target.replace(/^TABLE /, '')} ${to} ${who}`;
  };
  const revokes = [...held.keys].filter((k) => !desired.has(k));
  const grants = [...desired].filter((k) => !held.keys.has(k));
  const order = (k: PrivilegeKey) => (k.startsWith('T') ? 0 : k.startsWith('C') ? 1 : 2);
  revokes.sort((a, b) => order(a) - order(b));
  grants.sort((a, b) => order(b) - order(a));
  return [...revokes.map((k) => statement('REVOKE', k)), ...grants.map((k) => statement('GRANT', k))].filter(
    (s): s is string => s !== undefined,
  );
}

/** What the administration login cannot grant: per relation OID the privileges, and schemas (USAGE). */
export interface Ungrantable {
  readonly relations: ReadonlyMap<
    number,
    { readonly schema: string; readonly name: string; readonly missing: readonly string[] }
  >;
  readonly schemas: ReadonlySet<string>;
}

/** Keeps the keys the administration login can grant; the others are returned apart (to log). Pure. */
export function grantableOnly(
  desired: ReadonlySet<PrivilegeKey>,
  ungrantable: Ungrantable,
): { keep: Set<PrivilegeKey>; dropped: PrivilegeKey[] } {
  const keep = new Set<PrivilegeKey>();
  const dropped: PrivilegeKey[] = [];
  for (const key of desired) {
    const k = parseKey(key);
    const lacking =
      k.kind === 'N'
        ? ungrantable.schemas.has(k.schema)
        : ungrantable.relations.get(k.oid)?.missing.includes(k.priv);
    if (lacking) dropped.push(key);
    else keep.add(key);
  }
  return { keep, dropped };
}

export { schemaKey };

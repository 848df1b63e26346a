// Builds a Catalog from the result sets of a catalog read, whole or on top of an earlier read (incremental).
import { FIRST_NORMAL_OID, type ReadBase } from './catalog-changes.js';
import { RESULT } from './catalog-reads.js';
import type {
  Catalog,
  CatalogColumn,
  CatalogConstraint,
  CatalogFunction,
  CatalogRelation,
  CatalogType,
  RelationKind,
  WriteEvent,
} from './types.js';
import { catalogKey } from './types.js';

/** pg_class.relkind → RelationKind, for the kinds the Catalog holds (PostgreSQL 15 docs, 53.11 pg_class). */
const RELKINDS: Readonly<Record<string, RelationKind>> = {
  r: 'table',
  p: 'partitioned',
  v: 'view',
  m: 'matview',
  f: 'foreign',
  S: 'sequence',
};

/** pg_proc.provolatile (53.39 pg_proc). */
const VOLATILITY: Readonly<Record<string, CatalogFunction['volatility']>> = {
  i: 'immutable',
  s: 'stable',
  v: 'volatile',
};

/** pg_proc.prokind (53.39 pg_proc). */
const PROKINDS: Readonly<Record<string, CatalogFunction['kind']>> = {
  f: 'function',
  a: 'aggregate',
  w: 'window',
  p: 'procedure',
};

interface HeadRow {
  version: number;
  path: string[];
  temp: string;
  login: string;
  snapshot: string;
  casts: string | null;
  /** Incremental reads only (int8[] arrive as text). */
  dropped?: (string | number)[];
  types_changed?: boolean;
  functions_changed?: boolean;
}
interface NamespaceRow {
  oid: number;
  nspname: string;
}
interface RelationRow {
  oid: number;
  nspname: string;
  relname: string;
  relkind: string;
  reread: boolean;
  blocked: boolean;
  def: string | null;
  reltype: number | null;
  relhassubclass: boolean;
  relarray: number | null;
  parents: number[] | null;
}
interface ColumnRow {
  rel: number;
  attname: string;
  attnum: number;
  atttypid: number;
  typname: string;
  attnotnull: boolean;
  gen: string | null;
  genfrom: string[] | null;
  uniq: boolean;
}
interface ConstraintRow {
  rel: number;
  kind: CatalogConstraint['kind'];
  name: string;
  atts: number[] | null;
  ref_schema: string | null;
  ref_table: string | null;
  ref_cols: string[] | null;
  validated: boolean | null;
  events: WriteEvent[] | null;
  reads: [string, string][] | null;
}
interface UserTypeRow {
  oid: number;
  nspname: string;
  typname: string;
  why: string | null;
}
interface FunctionRow {
  oid: number;
  nspname: string;
  proname: string;
  args: string;
  prorettype: number;
  proretset: boolean;
  provolatile: string;
  prokind: string;
  outnames: string[] | null;
  outtypes: number[] | null;
  outparams: boolean;
}

/** The rows of one result set of a catalog read, values already parsed (pg's type parsers). */
export interface ResultRows {
  readonly rows: readonly unknown[];
}

/**
 * Facts of one catalog read that a later, incremental read compares against: the snapshot it
 * saw, the OID and name of every namespace, a fingerprint of pg_cast, and the views whose
 * definition it could not read because another session held a lock (`pending`, by OID and name).
 */
export interface CatalogStamp {
  readonly snapshot: string;
  readonly namespaces: ReadonlyMap<number, string>;
  readonly casts: string | null;
  readonly pending: ReadonlyMap<number, string>;
}

/** Thrown by an incremental build that cannot apply (a schema renamed or dropped, a cast changed): read everything. */
export class NeedsFullRead extends Error {}

const stamps = new WeakMap<Catalog, CatalogStamp>();

/** The stamp of a Catalog built here; undefined for one built elsewhere (a fixture). */
export function catalogStamp(catalog: Catalog): CatalogStamp | undefined {
  return stamps.get(catalog);
}

/**
 * What {@link catalogReads} needs to read only what changed since `catalog` was read; undefined
 * when `catalog` has no stamp (then read everything).
 */
export function readBaseOf(catalog: Catalog): ReadBase | undefined {
  const stamp = stamps.get(catalog);
  if (!stamp || stamp.casts === null) return undefined;
  // A catalog never changes once built: its base is worked out once (every read after DDL asks).
  const known = bases.get(catalog);
  if (known) return known;
  const relationConstraints: [number, number][] = [];
  for (const r of catalog.relations.values()) {
    // Partition keys are not counted: the change search counts the rest (catalog-reads.ts).
    const n = r.constraints?.filter((c) => c.kind !== 'partition').length ?? 0;
    if (r.oid >= FIRST_NORMAL_OID) relationConstraints.push([r.oid, n]);
  }
  const base: ReadBase = {
    snapshot: stamp.snapshot,
    relationConstraints,
    pending: [...stamp.pending.keys()],
    systemUserCodeTypes: [...(catalog.userCodeTypeOids ?? [])].filter((o) => o < FIRST_NORMAL_OID),
    userTypes: [...(catalog.types?.values() ?? [])].filter((t) => t.oid >= FIRST_NORMAL_OID).length,
    userFunctions: [...catalog.functions.values()].flat().filter((f) => f.oid >= FIRST_NORMAL_OID).length,
  };
  bases.set(catalog, base);
  return base;
}

const bases = new WeakMap<Catalog, ReadBase>();

/** The same Catalog value with another version (the stamp follows it). */
export function restamp(catalog: Catalog, version: number): Catalog {
  if (catalog.version === version) return catalog;
  const out = Object.freeze({ ...catalog, version });
  const stamp = stamps.get(catalog);
  if (stamp) stamps.set(out, stamp);
  return out;
}

function buildRelation(
  r: RelationRow,
  kind: RelationKind,
  columns: readonly CatalogColumn[],
  constraints: readonly ConstraintRow[],
): CatalogRelation {
  return Object.freeze({
    oid: r.oid,
    schema: r.nspname,
    name: r.relname,
    kind,
    columns: Object.freeze(columns),
    constraints: Object.freeze(
      constraints.map((c) => {
        // A whole-row reference (attnum 0) in an index expression reads every column.
        const names = (c.atts ?? []).includes(0)
          ? columns.map((x) => x.name)
          : (c.atts ?? [])
              .map((a) => columns.find((x) => x.attnum === a)?.name)
              .filter((x): x is string => !!x);
        return Object.freeze({
          kind: c.kind,
          name: c.name,
          columns: Object.freeze(names),
          ...(c.validated === false ? { validated: false as const } : {}),
          ...(c.events ? { events: Object.freeze([...c.events]) } : {}),
          ...(c.reads
            ? { reads: Object.freeze(c.reads.map(([sc, t]) => Object.freeze([sc, t] as const))) }
            : {}),
          ...(c.kind === 'foreign' && c.ref_schema && c.ref_table
            ? {
                references: Object.freeze({
                  schema: c.ref_schema,
                  table: c.ref_table,
                  columns: Object.freeze(c.ref_cols ?? []),
                }),
              }
            : {}),
        });
      }),
    ),
    viewDefinition: r.def,
    // Hidden follows the rows (policy/hidden-columns.ts): row types, inheritance and partitions.
    ...(r.reltype ? { rowTypeOid: r.reltype } : {}),
    ...(r.relarray ? { rowArrayTypeOid: r.relarray } : {}),
    hasChildren: r.relhassubclass === true,
    ...(r.parents && r.parents.length > 0 ? { parents: Object.freeze(r.parents) } : {}),
  });
}

function groupBy<T extends { rel: number }>(rows: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const r of rows) {
    const list = out.get(r.rel);
    if (list) list.push(r);
    else out.set(r.rel, [r]);
  }
  return out;
}

/**
 * Builds the Catalog from the result sets of {@link catalogReads} (in order, SET LOCAL's empty
 * one included), however they were read: by readCatalog on a catalog connection, or in-band on
 * a client's own upstream session (the proxy does that inside a transaction, where uncommitted
 * DDL and temporary tables are visible to that session only). `tempSchema` is the reading
 * session's own temporary schema (`pg_temp_N`), empty when it has none.
 *
 * With `base` (the catalog the reads were made incremental against, `catalogReads(readBaseOf(base))`),
 * objects below FIRST_NORMAL_OID and user relations not marked `reread` are taken from `base`.
 * A view whose definition could not be read (another session locks what it reads) keeps its
 * definition from `base` when nothing it reads changed since; otherwise its definition is null
 * (the analysis refuses statements that use it) and it is recorded as pending in the stamp.
 The head row of an incremental read says what changed; user types and functions are taken
 * from `base` unless it says they changed (then they were read again, all of them).
 * Throws NeedsFullRead when an incremental build cannot apply (a namespace renamed or dropped,
 * pg_cast changed); an Error when the result sets are not the expected ones.
 */
export function buildCatalog(
  results: readonly ResultRows[],
  version: number,
  base?: Catalog,
): Catalog & { readonly tempSchema: string } {
  if (results.length !== RESULT.count) throw new Error(`catalog read returned ${results.length} results`);
  const rows = <T>(i: number): T[] => results[i]!.rows as T[];
  const baseStamp = base ? stamps.get(base) : undefined;
  if (base && !baseStamp) throw new NeedsFullRead('the earlier catalog has no stamp');

  const head = rows<HeadRow>(RESULT.head)[0];
  if (!head) throw new Error('catalog read returned no server version');
  // An incremental read reads user types and functions only when they changed.
  if (base && (head.types_changed === undefined || head.functions_changed === undefined))
    throw new Error('incremental catalog read returned no summary');
  const typesRead = !base || head.types_changed === true;
  const functionsRead = !base || head.functions_changed === true;
  const namespaceRows = rows<NamespaceRow>(RESULT.namespaces);
  const namespaceOids = new Map(namespaceRows.map((r) => [r.oid, r.nspname]));
  if (baseStamp) {
    for (const [oid, name] of baseStamp.namespaces) {
      if (namespaceOids.get(oid) !== name) throw new NeedsFullRead(`schema ${name} was renamed or dropped`);
    }
    if (baseStamp.casts !== head.casts) throw new NeedsFullRead('pg_cast changed');
  }
  const namespaces = new Set(namespaceOids.values());

  const columnsByRel = new Map<number, CatalogColumn[]>();
  for (const r of rows<ColumnRow>(RESULT.columns)) {
    let list = columnsByRel.get(r.rel);
    if (!list) {
      list = [];
      columnsByRel.set(r.rel, list);
    }
    list.push(
      Object.freeze({
        name: r.attname,
        attnum: r.attnum,
        typeOid: r.atttypid,
        typeName: r.typname,
        notNull: r.attnotnull,
        generated: r.gen,
        generatedFrom: Object.freeze(r.genfrom ?? []),
        unique: r.uniq,
      }),
    );
  }
  const constraintsByRel = groupBy(rows<ConstraintRow>(RESULT.constraints));

  const relationRows = rows<RelationRow>(RESULT.relations);
  const relations = new Map<string, CatalogRelation>();
  if (base) {
    // Kept from the base: system relations, and user relations neither dropped nor read again.
    const gone = new Set([...(head.dropped ?? []), ...relationRows.map((r) => r.oid)].map(Number));
    for (const [key, r] of base.relations)
      if (r.oid < FIRST_NORMAL_OID || !gone.has(r.oid)) relations.set(key, r);
  }
  const pending = new Map<number, string>();
  for (const r of relationRows) {
    const kind = RELKINDS[r.relkind];
    if (!kind) continue;
    const key = catalogKey(r.nspname, r.relname);
    if (r.blocked) pending.set(r.oid, key);
    relations.set(
      key,
      buildRelation(r, kind, columnsByRel.get(r.oid) ?? [], constraintsByRel.get(r.oid) ?? []),
    );
  }

  // Types and functions not read again are the base's very values (no copy: a catalog is never
  // changed once built, and 3000 functions copied cost milliseconds on every read after DDL).
  const { types, userCodeTypeOids } =
    base?.types && base.userCodeTypeOids && !typesRead
      ? { types: base.types, userCodeTypeOids: base.userCodeTypeOids }
      : buildTypes(rows<UserTypeRow>(RESULT.userTypes), base);
  const functions =
    base && !functionsRead ? base.functions : buildFunctions(rows<FunctionRow>(RESULT.functions), base);

  const catalog = Object.freeze({
    version,
    tempSchema: head.temp,
    sessionUser: head.login,
    serverVersionNum: head.version,
    defaultSearchPath: Object.freeze([...head.path]),
    namespaces,
    relations,
    functions,
    types,
    userCodeTypeOids,
  });
  stamps.set(
    catalog,
    Object.freeze({ snapshot: head.snapshot, namespaces: namespaceOids, casts: head.casts, pending }),
  );
  return catalog;
}

/** The user types of `fresh` (all types in a full read) on top of the base's system types. */
function buildTypes(
  fresh: readonly UserTypeRow[],
  base: Catalog | undefined,
): { types: Map<string, CatalogType>; userCodeTypeOids: Set<number> } {
  const types = new Map<string, CatalogType>();
  const userCodeTypeOids = new Set<number>();
  for (const [key, t] of base?.types ?? []) if (t.oid < FIRST_NORMAL_OID) types.set(key, t);
  for (const oid of base?.userCodeTypeOids ?? []) if (oid < FIRST_NORMAL_OID) userCodeTypeOids.add(oid);
  for (const r of fresh) {
    const t = Object.freeze({ oid: r.oid, schema: r.nspname, name: r.typname, why: r.why });
    types.set(catalogKey(r.nspname, r.typname), t);
    if (r.why !== null) userCodeTypeOids.add(r.oid);
  }
  return { types, userCodeTypeOids };
}

/** The functions of `fresh` (all functions in a full read) on top of the base's system functions, grouped by `schema.name`. */
function buildFunctions(
  fresh: readonly FunctionRow[],
  base: Catalog | undefined,
): Map<string, CatalogFunction[]> {
  const functions = new Map<string, CatalogFunction[]>();
  const addFunction = (f: CatalogFunction) => {
    const key = catalogKey(f.schema, f.name);
    const list = functions.get(key);
    if (list) list.push(f);
    else functions.set(key, [f]);
  };
  for (const list of base?.functions.values() ?? [])
    for (const f of list) if (f.oid < FIRST_NORMAL_OID) addFunction(f);
  for (const r of fresh) {
    addFunction(
      Object.freeze({
        oid: r.oid,
        schema: r.nspname,
        name: r.proname,
        // oidvector prints as space-separated decimal OIDs, empty for no arguments.
        argTypes: Object.freeze(r.args === '' ? [] : r.args.split(' ').map(Number)),
        returnType: r.prorettype,
        returnsSet: r.proretset,
        volatility: VOLATILITY[r.provolatile] ?? 'volatile',
        kind: PROKINDS[r.prokind] ?? 'function',
        ...(r.outnames && r.outtypes
          ? {
              resultColumns: Object.freeze(
                r.outnames.map((name, i) => Object.freeze({ name, typeOid: r.outtypes?.[i] ?? 0 })),
              ),
              fromOutParameters: r.outparams,
            }
          : {}),
      }),
    );
  }
  for (const list of functions.values()) Object.freeze(list);
  return functions;
}

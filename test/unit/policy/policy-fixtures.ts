// Hand-built configs, catalogs and analyses for the policy unit tests (plain data, no database).
import type { Catalog, CatalogColumn, CatalogRelation } from '../../../src/catalog/types.js';
import { type Config, configSchema } from '../../../src/policy/config-schema.js';
import type {
  Analysis,
  ColumnUse,
  Requirement,
  ResultColumn,
  SessionEffect,
  StatementAnalysis,
  StatementKind,
} from '../../../src/sql/analysis-types.js';

/** A validated config from a plain object; `databases` defaults to demo and other. */
export function makeConfig(obj: Record<string, unknown>): Config {
  return configSchema.parse({
    databases: {
      demo: { url: 'postgres://app@127.0.0.1:5432/demo' },
      other: { url: 'postgres://app@127.0.0.1:5432/other' },
    },
    ...obj,
  });
}

/**
 * The rule `deny SEE` on column `schema.table.column` of database demo (seed 004, "Hiding a
 * column"): the column's values are hidden from the role holding it.
 */
export function denySee(qualified: string): {
  effect: 'deny';
  actions: ['SEE'];
  database: 'demo';
  schema: string;
  table: string;
  column: string;
} {
  return { effect: 'deny', actions: ['SEE'], database: 'demo', ...ref(qualified) };
}

/** A text column of the small catalog: name, attnum, unique, generated-from. */
export function col(
  name: string,
  attnum: number,
  opts: { unique?: boolean; from?: string[] } = {},
): CatalogColumn {
  return {
    name,
    attnum,
    typeOid: 25,
    typeName: 'text',
    notNull: false,
    generated: opts.from ? `lower(${opts.from[0]})` : null,
    generatedFrom: opts.from ?? [],
    unique: opts.unique ?? false,
  };
}

function rel(oid: number, schema: string, name: string, columns: CatalogColumn[]): CatalogRelation {
  return { oid, schema, name, kind: 'table', columns, viewDefinition: null };
}

/**
 * public.users(id unique, name, email, ssn unique, email_lower generated from email),
 * public.t1(c1, c2), public.t2(c1), sales.orders(id unique, note).
 */
export function smallCatalog(version = 1): Catalog {
  const rels = [
    rel(100, 'public', 'users', [
      col('id', 1, { unique: true }),
      col('name', 2),
      col('email', 3),
      col('ssn', 4, { unique: true }),
      col('email_lower', 5, { from: ['email'] }),
    ]),
    rel(101, 'public', 't1', [col('c1', 1), col('c2', 2)]),
    rel(102, 'public', 't2', [col('c1', 1)]),
    rel(103, 'sales', 'orders', [col('id', 1, { unique: true }), col('note', 2)]),
  ];
  return {
    version,
    serverVersionNum: 150000,
    defaultSearchPath: ['public'],
    namespaces: new Set(['public', 'sales', 'pg_catalog']),
    relations: new Map(rels.map((r) => [`${r.schema}.${r.name}`, r])),
    functions: new Map(),
  };
}

/** `schema.table` requirement. */
export function tableReq(action: Requirement['action'], qualified: string, location?: number): Requirement {
  const [schema, table] = qualified.split('.') as [string, string];
  return {
    action,
    object: { level: 'table', schema, table },
    reason: 'read in FROM',
    ...(location !== undefined ? { location } : {}),
  };
}

/** `schema.table.column` requirement. */
export function columnReq(action: Requirement['action'], qualified: string, location?: number): Requirement {
  const [schema, table, column] = qualified.split('.') as [string, string, string];
  return {
    action,
    object: { level: 'column', schema, table, column },
    reason: 'column reference',
    ...(location !== undefined ? { location } : {}),
  };
}

/** MANAGE on the database, for `reason`. */
export function manageReq(reason: string): Requirement {
  return { action: 'MANAGE', object: { level: 'database' }, reason, location: 0 };
}

/** Splits `schema.table.column`. */
export function ref(qualified: string): { schema: string; table: string; column: string } {
  const [schema, table, column] = qualified.split('.') as [string, string, string];
  return { schema, table, column };
}

/** An `output k` use. */
export function output(qualified: string, outputIndex: number, location = 7): ColumnUse {
  return { use: 'output', outputIndex, location, ...ref(qualified) };
}

/** One statement with the given parts (defaults: SELECT, nothing). */
export function stmt(parts: {
  kind?: StatementKind;
  nodeType?: string;
  requirements?: readonly Requirement[];
  uses?: readonly ColumnUse[];
  resultColumns?: readonly ResultColumn[];
  sessionEffects?: SessionEffect[];
}): StatementAnalysis {
  return {
    nodeType: parts.nodeType ?? 'SelectStmt',
    kind: parts.kind ?? 'SELECT',
    location: 0,
    length: 10,
    requirements: parts.requirements ?? [],
    resultColumns: parts.resultColumns ?? [],
    uses: parts.uses ?? [],
    functions: [],
    catalogRelations: [],
    sessionEffects: parts.sessionEffects ?? [],
  };
}

/** A result column traced to `qualified` (or untraceable when null). */
export function resultCol(name: string, qualified: string | null): ResultColumn {
  return {
    name,
    sources: qualified === null ? null : [ref(qualified)],
    origin: { tableOid: 0, attnum: 0 },
  };
}

/** An analysis of the given statements. */
export function analysisOf(...statements: StatementAnalysis[]): Analysis {
  return { statements };
}

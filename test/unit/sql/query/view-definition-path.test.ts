// A view's definition is resolved under the path it was printed under (pg_get_viewdef under pg_catalog, pg_temp), never the login's.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Catalog, CatalogRelation } from '../../../../src/catalog/types.js';
import { analyze, loadParser } from '../../../../src/sql/analyze.js';
import { col } from '../../policy/policy-fixtures.js';

beforeAll(async () => {
  await loadParser(15);
});

function rel(
  oid: number,
  schema: string,
  name: string,
  cols: string[],
  def: string | null = null,
): CatalogRelation {
  return {
    oid,
    schema,
    name,
    kind: def === null ? 'table' : 'view',
    columns: cols.map((c, i) => col(c, i + 1)),
    viewDefinition: def,
  };
}

/**
 * A login whose default path lists pg_catalog after public, where a table public.pg_stat_activity
 * stands beside the catalog's view of that name, and a view whose definition (as pg_get_viewdef
 * prints it under pg_catalog: catalog names unqualified) reads the catalog's.
 */
function catalog(): Catalog {
  const rels = [
    rel(11000, 'pg_catalog', 'pg_stat_activity', ['pid', 'query']),
    rel(20000, 'public', 'pg_stat_activity', ['pid', 'query']),
    rel(20001, 'public', 'activity', ['query'], ' SELECT pg_stat_activity.query\n   FROM pg_stat_activity;'),
  ];
  return {
    version: 1,
    serverVersionNum: 150018,
    defaultSearchPath: ['public', 'pg_catalog'],
    namespaces: new Set(['public', 'pg_catalog']),
    relations: new Map(rels.map((r) => [`${r.schema}.${r.name}`, r])),
    functions: new Map(),
  } as Catalog;
}

describe('view definitions', () => {
  it("read the catalog relation the definition names, whatever the login's path puts before pg_catalog", () => {
    const a = analyze('SELECT query FROM activity', {
      catalog: catalog(),
      searchPath: ['public', 'pg_catalog'],
    });
    expect(a.refusal?.message).toBeUndefined();
    expect(a.statements[0]?.catalogRelations).toContain('pg_catalog.pg_stat_activity');
  });
});

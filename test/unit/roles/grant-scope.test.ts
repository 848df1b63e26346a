// The scope of a grant sync after a catalog change (issue 15): every relation outside it plans exactly as before; no database needed.
import fs from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import type { Catalog, CatalogRelation } from '../../../src/catalog/types.js';
import { catalogKey } from '../../../src/catalog/types.js';
import { parseConfig } from '../../../src/policy/config-load.js';
import type { Config } from '../../../src/policy/config-schema.js';
import { planRelation } from '../../../src/roles/grant-plan.js';
import { grantScope } from '../../../src/roles/grant-scope.js';
import { loadParser } from '../../../src/sql/parser.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

let config: Config;
beforeAll(async () => {
  await loadParser(15);
  const raw = YAML.parse(fs.readFileSync('examples/demo/pgwarden.yaml', 'utf8')) as Record<string, unknown>;
  delete raw.env_file;
  config = parseConfig(YAML.stringify(raw), 'pgwarden.yaml', {
    PGWARDEN_UPSTREAM_PORT: '5432',
    PGWARDEN_UPSTREAM_PASSWORD: 'x',
  }).config;
});

/** The demo fixture, with row types on users and orgs (the fixture has none), as a catalog read would give. */
const base: Catalog = ((): Catalog => {
  const c = loadDemoCatalog();
  const relations = new Map(c.relations);
  for (const [name, rowTypeOid] of [
    ['users', 90001],
    ['orgs', 90002],
  ] as const) {
    const key = catalogKey('public', name);
    relations.set(key, {
      ...(relations.get(key) as CatalogRelation),
      rowTypeOid,
      rowArrayTypeOid: rowTypeOid + 1,
    });
  }
  return { ...c, relations };
})();

const rel = (c: Catalog, name: string): CatalogRelation => {
  const r = c.relations.get(catalogKey('public', name));
  if (!r) throw new Error(name);
  return r;
};

/** `c` with relations replaced or added (`set`) and dropped (`drop`, by name); the others are the same values, as an incremental read keeps them. */
function changed(
  c: Catalog,
  edit: { set?: CatalogRelation[]; drop?: string[] },
  extra: Partial<Catalog> = {},
): Catalog {
  const relations = new Map(c.relations);
  for (const name of edit.drop ?? []) relations.delete(catalogKey('public', name));
  for (const r of edit.set ?? []) {
    for (const [k, x] of relations) if (x.oid === r.oid) relations.delete(k);
    relations.set(catalogKey(r.schema, r.name), r);
  }
  return { ...c, version: c.version + 1, relations, ...extra };
}

const column = (name: string, attnum: number, typeOid = 25) => ({
  name,
  attnum,
  typeOid,
  typeName: 'text',
  notNull: false,
  generated: null,
  generatedFrom: [],
  unique: false,
});

const table = (
  oid: number,
  name: string,
  columns: ReturnType<typeof column>[],
  more: Partial<CatalogRelation> = {},
) =>
  ({ oid, schema: 'public', name, kind: 'table', columns, viewDefinition: null, ...more }) as CatalogRelation;

const ROLE_SETS = [['analyst'], ['support'], ['dba'], ['analyst', 'support']];

/** The scope of before → after; every user relation of `after` outside it plans as it did in `before`, for every role set. */
function expectScopeHolds(before: Catalog, after: Catalog): Set<number> {
  const s = grantScope(before, after);
  if (!('relations' in s)) throw new Error(`full: ${s.full}`);
  const old = new Map([...before.relations.values()].map((r) => [r.oid, r]));
  for (const r of after.relations.values()) {
    if (r.oid < 16384 || s.relations.has(r.oid)) continue;
    const o = old.get(r.oid);
    expect(o, `${r.name} is new and out of scope`).toBeDefined();
    for (const roles of ROLE_SETS) {
      const input = (catalog: Catalog) => ({
        config,
        roles,
        database: 'demo',
        connection: 'proxified' as const,
        catalog,
        defaultSequences: new Map(),
      });
      expect(planRelation(r, input(after)), `${r.name} for ${roles}`).toEqual(
        planRelation(o as CatalogRelation, input(before)),
      );
    }
  }
  return s.relations;
}

const names = (c: Catalog, oids: Set<number>) =>
  [...c.relations.values()].filter((r) => oids.has(r.oid)).map((r) => r.name);

describe('grantScope', () => {
  test('nothing changed: an empty scope', () => {
    expect(expectScopeHolds(base, changed(base, {})).size).toBe(0);
  });

  test('a new table: only itself', () => {
    const after = changed(base, { set: [table(70001, 't_new', [column('id', 1), column('v', 2)])] });
    expect(names(after, expectScopeHolds(base, after))).toEqual(['t_new']);
  });

  test('a column added to orders: orders and what reads it, not users', () => {
    const o = rel(base, 'orders');
    const after = changed(base, { set: [{ ...o, columns: [...o.columns, column('w', 9)] }] });
    const scope = expectScopeHolds(base, after);
    expect(scope.has(o.oid)).toBe(true);
    expect(scope.has(rel(base, 'users').oid)).toBe(false);
  });

  test('users renamed: the views and materialized view that read it come along (their columns are no longer hidden)', () => {
    const u = rel(base, 'users');
    const after = changed(base, { set: [{ ...u, name: 'users_old' }] });
    const scope = expectScopeHolds(base, after);
    for (const v of ['user_emails', 'user_directory', 'org_counts'])
      expect(scope.has(rel(base, v).oid), v).toBe(true);
    expect(scope.has(rel(base, 'badges').oid)).toBe(false);
  });

  test('orgs dropped and badges renamed to orgs: a table renamed onto a name with hidden columns', () => {
    const o = rel(base, 'orgs');
    const b = rel(base, 'badges');
    const after = changed(base, { drop: ['orgs', 'badges'], set: [{ ...b, name: 'orgs' }] });
    const scope = expectScopeHolds(base, after);
    expect(scope.has(o.oid) && scope.has(b.oid)).toBe(true);
  });

  test('a new inheritance child of users: the child and users (hidden follows the rows both ways)', () => {
    const u = rel(base, 'users');
    const child = table(70002, 'users_child', [column('id', 1), column('ssn', 2), column('extra', 3)], {
      parents: [u.oid],
    });
    const after = changed(base, { set: [child, { ...u, hasChildren: true }] });
    expect(expectScopeHolds(base, after).has(child.oid)).toBe(true);
    // The child alone changing (its parent untouched) still reaches the parent.
    const later = changed(after, { set: [{ ...child, columns: [...child.columns, column('more', 4)] }] });
    expect(expectScopeHolds(after, later).has(u.oid)).toBe(true);
  });

  test("a table with a column of users' row type comes along when users changes", () => {
    const u = rel(base, 'users');
    const holder = table(70003, 'holder', [column('id', 1), column('u', 2, u.rowTypeOid)]);
    const before = changed(base, { set: [holder] });
    const after = changed(before, {
      set: [{ ...rel(before, 'users'), columns: [...u.columns, column('z', 9)] }],
    });
    expect(expectScopeHolds(before, after).has(holder.oid)).toBe(true);
  });

  test('foreign keys reach one step both ways', () => {
    const u = rel(base, 'users');
    const fk = table(70004, 'refs_users', [column('id', 1), column('user_id', 2)], {
      constraints: [
        {
          kind: 'foreign',
          name: 'fk',
          columns: ['user_id'],
          references: { schema: 'public', table: 'users', columns: ['id'] },
        },
      ],
    });
    const before = changed(base, { set: [fk] });
    const after = changed(before, { set: [{ ...u, columns: [...u.columns, column('z', 9)] }] });
    expect(expectScopeHolds(before, after).has(fk.oid)).toBe(true);
    const after2 = changed(before, { set: [{ ...fk, columns: [...fk.columns, column('z', 9)] }] });
    expect(expectScopeHolds(before, after2).has(u.oid)).toBe(true);
  });

  test('a relation read again with the same content counts (its defaults or owner may have changed)', () => {
    const o = rel(base, 'orders');
    const after = changed(base, { set: [{ ...o }] });
    expect([...expectScopeHolds(base, after)]).toEqual([o.oid]);
  });

  test('a full re-read with the same content: an empty scope (compared by content)', () => {
    const relations = new Map([...base.relations].map(([k, r]) => [k, { ...r }]));
    expect(expectScopeHolds(base, { ...base, relations }).size).toBe(0);
  });

  test('user functions changed: every view and materialized view', () => {
    const functions = new Map(base.functions);
    functions.set('public.f_new', [
      {
        oid: 80001,
        schema: 'public',
        name: 'f_new',
        argTypes: [],
        returnType: 25,
        returnsSet: false,
        volatility: 'stable',
        kind: 'function',
      },
    ]);
    const after = changed(base, {}, { functions });
    expect(names(after, expectScopeHolds(base, after)).sort()).toEqual([
      'org_counts',
      'user_directory',
      'user_emails',
    ]);
  });

  test('in full when types whose input runs user code changed, a schema is gone, or the search_path moved', () => {
    const t = grantScope(
      base,
      changed(base, {}, { userCodeTypeOids: new Set([...(base.userCodeTypeOids ?? []), 99999]) }),
    );
    expect(t).toEqual({ full: 'the types whose input runs user code changed' });
    const ns = new Set(base.namespaces);
    ns.delete('public');
    expect(grantScope(base, changed(base, {}, { namespaces: ns }))).toEqual({
      full: 'schema public is gone',
    });
    expect(grantScope(base, changed(base, {}, { defaultSearchPath: ['other'] }))).toEqual({
      full: 'the default search_path changed',
    });
  });
});

// list_tables (src/mcp/table-catalog.ts): the relations a key may SELECT, and pgwarden's own schema only for a key holding MANAGE.
import { describe, expect, test } from 'vitest';
import type { Catalog, CatalogRelation } from '../../../src/catalog/types.js';
import { listTables } from '../../../src/mcp/table-catalog.js';
import { makeConfig, smallCatalog } from '../policy/policy-fixtures.js';

/** The small catalog with pgwarden's own tables beside it, as a policy store in the database leaves them. */
function withOwnSchema(): Catalog {
  const c = smallCatalog();
  const own: CatalogRelation[] = ['policy_users', 'role_set_logins'].map((name, i) => ({
    oid: 200 + i,
    schema: 'pgwarden',
    name,
    kind: 'table',
    columns: [],
    viewDefinition: null,
  }));
  return {
    ...c,
    relations: new Map([...c.relations, ...own.map((r) => [`${r.schema}.${r.name}`, r] as const)]),
  };
}

const config = makeConfig({
  roles: {
    analyst: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' }] },
    dba: { permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE', 'MANAGE'], database: 'demo' }] },
  },
});
const key = (roles: string[]) => ({ keyId: 'agent', token: 't', roles });
const names = (roles: string[]) =>
  listTables(config, key(roles), 'demo', withOwnSchema()).map((t) => `${t.schema}.${t.name}`);

describe('list_tables', () => {
  test("a key with SELECT on the whole database does not get pgwarden's own tables, which need MANAGE", () => {
    expect(names(['analyst'])).toEqual(['public.t1', 'public.t2', 'public.users', 'sales.orders']);
  });

  test('a key holding MANAGE gets them too', () => {
    expect(names(['dba'])).toEqual([
      'pgwarden.policy_users',
      'pgwarden.role_set_logins',
      'public.t1',
      'public.t2',
      'public.users',
      'sales.orders',
    ]);
  });
});

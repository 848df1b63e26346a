// Grants computed from the decision (issue 17), set login names, and the GRANT/REVOKE difference: no database needed.
import fs from 'node:fs';
import { beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { catalogKey } from '../../../src/catalog/types.js';
import { parseConfig } from '../../../src/policy/config-load.js';
import type { Config } from '../../../src/policy/config-schema.js';
import { planGrants } from '../../../src/roles/grant-plan.js';
import { grantDiff } from '../../../src/roles/grant-sync.js';
import { setLoginName } from '../../../src/roles/role-names.js';
import { loadParser } from '../../../src/sql/parser.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

const catalog = loadDemoCatalog();
let config: Config;
beforeAll(async () => {
  await loadParser(15);
  const raw = YAML.parse(fs.readFileSync('examples/demo/pgwarden.yaml', 'utf8')) as Record<string, unknown>;
  raw.env_file = undefined;
  delete raw.env_file;
  config = parseConfig(YAML.stringify(raw), 'pgwarden.yaml', {
    PGWARDEN_UPSTREAM_PORT: '5432',
    PGWARDEN_UPSTREAM_PASSWORD: 'x',
  }).config;
});

function oidOf(table: string): number {
  const r = catalog.relations.get(catalogKey('public', table));
  if (!r) throw new Error(table);
  return r.oid;
}

function plan(roles: string[]) {
  return planGrants({
    config,
    roles,
    database: 'demo',
    connection: 'proxified',
    catalog,
    defaultSequences: new Map(),
  });
}

describe('planGrants: what the decision allows, per column', () => {
  test('analyst: SELECT on the visible columns of users, never on a column without SEE; no writes', () => {
    const p = plan(['analyst']);
    const users = oidOf('users');
    const of = (priv: string) =>
      [...p].filter((k) => k.startsWith(`C|${users}|`) && k.endsWith(`|${priv}`)).map((k) => k.split('|')[2]);
    // And the system columns the decision allows (tableoid only when the catalog says users has no
    // inheritance children, which the fixture does not say).
    expect(of('SELECT')).toEqual(['id', 'name', 'org_id', 'xmin', 'cmin', 'xmax', 'cmax', 'ctid']);
    expect(of('INSERT')).toEqual([]);
    expect(p.has(`T|${users}|DELETE`)).toBe(false);
    expect(p.has('N|public|USAGE')).toBe(true);
  });

  test('support: writes into hidden columns are allowed (seed 004), reads of them are not', () => {
    const p = plan(['support']);
    const users = oidOf('users');
    expect(p.has(`C|${users}|email|UPDATE`)).toBe(true);
    expect(p.has(`C|${users}|email|INSERT`)).toBe(true);
    expect(p.has(`C|${users}|email|SELECT`)).toBe(false);
    expect(p.has(`T|${users}|DELETE`)).toBe(false);
  });

  test('a role with no rule on the database gets nothing', () => {
    expect([...plan(['nosuchrole'])]).toEqual([]);
  });

  test('no grant is ever planned in system schemas or in pgwarden', () => {
    const p = plan(['dba']);
    const oids = new Set(
      [...catalog.relations.values()]
        .filter((r) => r.schema.startsWith('pg_') || r.schema === 'information_schema')
        .map((r) => r.oid),
    );
    expect([...p].filter((k) => oids.has(Number(k.split('|')[1])))).toEqual([]);
    expect([...p].filter((k) => k.startsWith('N|pg_') || k === 'N|information_schema|USAGE')).toEqual([]);
  });
});

describe('set login names', () => {
  test('pgwarden_set_ and 24 hex digits over the database OID and the sorted role OIDs', () => {
    const a = setLoginName(16384, [20001, 20002]);
    expect(a).toMatch(/^pgwarden_set_[0-9a-f]{24}$/);
    expect(setLoginName(16384, [20002, 20001])).toBe(a);
    expect(setLoginName(16385, [20001, 20002])).not.toBe(a);
    expect(setLoginName(16384, [20001])).not.toBe(a);
  });
});

describe('grantDiff', () => {
  test('revokes first (relation-level, then columns), then grants; relations named from the catalog', () => {
    const users = oidOf('users');
    const held = {
      keys: new Set([`T|${users}|SELECT`, `C|${users}|email|SELECT`, 'N|public|USAGE']),
      relations: new Map([[users, { schema: 'public', name: 'users', relkind: 'r' }]]),
    };
    const desired = new Set([`C|${users}|id|SELECT`, 'N|public|USAGE']);
    expect(grantDiff('pgwarden_set_x', held, desired, catalog)).toEqual([
      'REVOKE SELECT ON TABLE "public"."users" FROM "pgwarden_set_x"',
      'REVOKE SELECT ("email") ON "public"."users" FROM "pgwarden_set_x"',
      'GRANT SELECT ("id") ON "public"."users" TO "pgwarden_set_x"',
    ]);
  });

  test('nothing to do when held equals desired', () => {
    const keys = new Set(['N|public|USAGE']);
    expect(grantDiff('r', { keys, relations: new Map() }, keys, catalog)).toEqual([]);
  });
});

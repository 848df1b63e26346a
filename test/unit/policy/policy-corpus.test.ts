// Runs corpus/policy/*.yaml: each case's SQL through analyze() and decide() under corpus/policy/policy.yaml.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { parseConfig } from '../../../src/policy/config-load.js';
import type { Config } from '../../../src/policy/config-schema.js';
import { checkDatabaseAccess } from '../../../src/policy/database-access.js';
import { decide } from '../../../src/policy/decide.js';
import type { ConnectionKind, Refusal } from '../../../src/policy/decision-types.js';
import { findPrincipal } from '../../../src/policy/principals.js';
import { resolveRoles } from '../../../src/policy/resolve-roles.js';
import { analyze, loadParser } from '../../../src/sql/analyze.js';
import { loadDemoCatalog } from '../../fixtures/demo-catalog.js';

const DIR = path.resolve(import.meta.dirname, '../../../corpus/policy');

/** One corpus case (see the header of corpus/policy/demo.yaml). */
interface PolicyCase {
  id: string;
  user: string;
  role?: string;
  database?: string;
  connection?: ConnectionKind;
  sql: string;
  verdict: 'allowed' | 'allowed with masks' | 'refused';
  mask?: number[];
  sqlstate?: string;
  message?: string;
  position?: number;
}

/** The decision of one case in the corpus's terms. */
function run(config: Config, c: PolicyCase): { verdict: string; mask: number[]; refusal?: Refusal } {
  const principal = findPrincipal(config, c.user, Date.now());
  if (!principal) throw new Error(`${c.id}: no user ${c.user}`);
  const roles = resolveRoles(config, principal, c.role !== undefined ? { requestedRole: c.role } : {});
  if (!roles.ok)
    return { verdict: 'refused', mask: [], refusal: { sqlstate: roles.sqlstate, message: roles.message } };
  const database = c.database ?? 'demo';
  const connection = c.connection ?? (config.mode as ConnectionKind);
  const access = checkDatabaseAccess(config, roles.roles, database, connection);
  if (!access.ok)
    return { verdict: 'refused', mask: [], refusal: { sqlstate: access.sqlstate, message: access.message } };
  const catalog = loadDemoCatalog();
  const analysis = analyze(c.sql, { catalog, searchPath: ['public'] });
  const d = decide(analysis, roles.roles, { config, catalog, database, connection });
  if (d.refusal) return { verdict: 'refused', mask: [], refusal: d.refusal };
  const mask = d.statements.flatMap((s) => (s.verdict === 'allow' ? s.mask : []));
  return { verdict: mask.length > 0 ? 'allowed with masks' : 'allowed', mask };
}

const config = parseConfig(
  fs.readFileSync(path.join(DIR, 'policy.yaml'), 'utf8'),
  path.join(DIR, 'policy.yaml'),
  {},
).config;
const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.yaml') && f !== 'policy.yaml');

beforeAll(async () => {
  await loadParser(15);
});

for (const file of files) {
  const cases = YAML.parse(fs.readFileSync(path.join(DIR, file), 'utf8')) as PolicyCase[];
  describe(`corpus/policy/${file}`, () => {
    test('case ids are unique', () => {
      expect(new Set(cases.map((c) => c.id)).size).toBe(cases.length);
    });
    for (const c of cases) {
      test(`${c.id}: ${c.sql}`, () => {
        const got = run(config, c);
        const want: Record<string, unknown> = { verdict: c.verdict };
        const have: Record<string, unknown> = { verdict: got.verdict };
        if (c.mask) [want.mask, have.mask] = [c.mask, got.mask];
        if (c.verdict === 'refused') {
          [want.sqlstate, have.sqlstate] = [c.sqlstate ?? '42501', got.refusal?.sqlstate];
          if (c.message) [want.message, have.message] = [c.message, got.refusal?.message];
          if (c.position) [want.position, have.position] = [c.position, got.refusal?.position];
        }
        expect({ ...have, why: got.refusal?.message }).toEqual({ ...want, why: got.refusal?.message });
      });
    }
  });
}

// replayAudit (src/policy/replay.ts): audit lines decided again under a proposed policy; EXECUTE and FETCH are left to their PREPARE and DECLARE.
import { beforeAll, describe, expect, test } from 'vitest';
import { replayAudit } from '../../../src/policy/replay.js';
import { loadParser } from '../../../src/sql/parser.js';
import { denySee, makeConfig, smallCatalog } from './policy-fixtures.js';

beforeAll(async () => {
  await loadParser(15);
});

const policy = (...deny: string[]) =>
  makeConfig({
    users: { alice: { scram: 'SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVkS2V5:c2VydmVyS2V5' } },
    roles: {
      analyst: {
        tenants: ['u/alice'],
        permissions: [
          { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
          ...deny.map(denySee),
        ],
      },
    },
  });

/** Audit lines as proxy/audit.ts writes them: one session that prepares, executes, declares and fetches. */
const lines = [
  { sql: 'prepare p as select name, email from users where id = $1', decision: 'allowed' },
  { sql: 'execute p($1)', decision: 'masked', masked: ['1'] },
  { sql: 'declare c cursor for select name, email from users', decision: 'allowed' },
  { sql: 'fetch 10 from c', decision: 'masked', masked: ['1'] },
  { sql: 'select c1 from t1', decision: 'allowed' },
].map((l) => ({ audit: true, identity: 'alice', database: 'demo', searchPath: ['public'], ...l }));

describe('replayAudit', () => {
  test('EXECUTE and FETCH are skipped: alone they read no column, so replayed they would claim every mask removed', async () => {
    const r = await replayAudit(lines, {
      proposed: policy('public.users.email'),
      catalog: async () => smallCatalog(),
    });
    expect(r.changes).toEqual([]);
    expect(r.skipped).toBe(2);
    expect(r.lines).toBe(5);
  });

  test('against the recorded verdicts a PREPARE or DECLARE line counts a refusal only (it records no masks)', async () => {
    const stricter = await replayAudit(lines, {
      proposed: policy('public.users.email', 'public.users.name'),
      catalog: async () => smallCatalog(),
    });
    expect(stricter.changes).toEqual([]);
    const refused = await replayAudit(lines, {
      proposed: makeConfig({
        ...policy(),
        roles: {
          analyst: {
            tenants: ['u/alice'],
            permissions: [
              {
                effect: 'allow',
                actions: ['SELECT', 'SEE'],
                database: 'demo',
                schema: 'public',
                table: 't1',
              },
            ],
          },
        },
      }),
      catalog: async () => smallCatalog(),
    });
    expect(refused.changes.map((c) => [c.sql, c.change])).toEqual([
      [lines[0]?.sql, 'allowed→refused'],
      [lines[2]?.sql, 'allowed→refused'],
    ]);
  });

  test('against a current policy, a mask added to the statement a PREPARE or DECLARE holds shows on its line', async () => {
    const r = await replayAudit(lines, {
      current: policy('public.users.email'),
      proposed: policy('public.users.email', 'public.users.name'),
      catalog: async () => smallCatalog(),
    });
    expect(r.changes.map((c) => [c.sql, c.change, c.after])).toEqual([
      [lines[0]?.sql, 'masks-added', { decision: 'masked', masked: ['name', 'email'] }],
      [lines[2]?.sql, 'masks-added', { decision: 'masked', masked: ['name', 'email'] }],
    ]);
  });
});

// Settings: pgwarden.roles is fixed per connection, and search_path changes only where pgwarden can track them.
// Corpus: corpus/attacks/settings.yaml.
import { describe, expect, test } from 'vitest';
import { outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice'] });
const { users } = fx;

describe('pgwarden.roles and search_path through set_config', () => {
  const refusedForAlice: string[] = [
    "select set_config('pgwarden.roles', 'dba', false)",
    "select * from (select set_config('pgwarden.roles', 'x', false)) s",
    "values (set_config('pgwarden.roles', 'x', false))",
    // What pgwarden's in-band catalog read hands between its statements.
    "select set_config('pgwarden_catalog.reread', '1', false)",
    "set pgwarden_catalog.reread = '1'",
    'set local pgwarden_catalog.types_changed = true',
  ];
  for (const sql of refusedForAlice) {
    test(`alice: ${sql}`, async () => {
      expect((await outcome(users.alice, sql)).code).toBe('42501');
    });
  }

  test('alice: EXECUTE parameters cannot change pgwarden.roles or search_path', async () => {
    const c = await fx.proxy.client('alice');
    try {
      await c.query('prepare p(text) as select $1');
      expect((await outcome(c, "execute p(set_config('pgwarden.roles', 'dba', false))")).code).toBe('42501');
      expect((await outcome(c, "execute p(set_config('search_path', 'x', false))")).code).toBe('0A000');
      expect((await c.query('show pgwarden.roles')).rows).toEqual([{ 'pgwarden.roles': 'analyst' }]);
    } finally {
      await c.end();
    }
  });
});

// The analysis cache's keys: texts that differ only in literals never share an analysis the literal decides.
// Corpus: corpus/attacks/analysis-cache.yaml.
import { describe, expect, test } from 'vitest';
import { outcome } from '../../helpers/outcomes.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({ users: ['alice'] });
const { users } = fx;

describe('set_config over pg_settings, the setting named by a WHERE literal', () => {
  test('cache-set-config-pg-settings-where-literal: a same-length harmless setting name does not make set_config(search_path) through pg_settings pass', async () => {
    const before = (await outcome(users.alice, 'show search_path')).rows;
    // Warm-up: a harmless setting of the same length (11) as search_path; the upstream error does not matter.
    await outcome(
      users.alice,
      "SELECT set_config(name, 'pg_temp,public,q', false) FROM pg_settings WHERE name = 'lc_monetary'",
    );
    const attack = await outcome(
      users.alice,
      "SELECT set_config(name, 'pg_temp,public,q', false) FROM pg_settings WHERE name = 'search_path'",
    );
    expect(attack.code).toBe('0A000');
    expect((await outcome(users.alice, 'show search_path')).rows).toEqual(before);
  });

  test('cache-set-config-pg-settings-where-literal-manage: a harmless setting name does not stand in for one needing MANAGE', async () => {
    // lc_monetary (harmless) and array_nulls (any other setting: MANAGE), both 11 characters.
    await outcome(
      users.alice,
      "SELECT set_config(name, 'off', false) FROM pg_settings WHERE name = 'lc_monetary'",
    );
    const attack = await outcome(
      users.alice,
      "SELECT set_config(name, 'off', false) FROM pg_settings WHERE name = 'array_nulls'",
    );
    expect(attack.code).toBe('42501');
  });
});

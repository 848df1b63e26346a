// Fourth round of attacks: the analysis cache's lexical key (texts differing only in literals).
// describe('leaks'): findings — each asserts the SAFE behaviour and fails until the product is fixed.
// Corpus: corpus/attacks4.yaml.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { outcome } from '../helpers/outcomes.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

let proxy: TestProxy;
let alice: pg.Client;

beforeAll(async () => {
  proxy = await startTestProxy(demoConfigObject());
  alice = await proxy.client('alice');
});

afterAll(async () => {
  await alice.end();
  await proxy.close();
});

describe('leaks', () => {
  test('cache-set-config-pg-settings-where-literal: a same-length harmless setting name does not make set_config(search_path) through pg_settings pass', async () => {
    const before = (await outcome(alice, 'show search_path')).rows;
    // Warm-up: a harmless setting of the same length (11) as search_path; the upstream error does not matter.
    await outcome(
      alice,
      "SELECT set_config(name, 'pg_temp,public,q', false) FROM pg_settings WHERE name = 'lc_monetary'",
    );
    const attack = await outcome(
      alice,
      "SELECT set_config(name, 'pg_temp,public,q', false) FROM pg_settings WHERE name = 'search_path'",
    );
    expect(attack.code).toBe('0A000');
    expect((await outcome(alice, 'show search_path')).rows).toEqual(before);
  });

  test('cache-set-config-pg-settings-where-literal-manage: a harmless setting name does not stand in for one needing MANAGE', async () => {
    // lc_monetary (harmless) and array_nulls (any other setting: MANAGE), both 11 characters.
    await outcome(alice, "SELECT set_config(name, 'off', false) FROM pg_settings WHERE name = 'lc_monetary'");
    const attack = await outcome(
      alice,
      "SELECT set_config(name, 'off', false) FROM pg_settings WHERE name = 'array_nulls'",
    );
    expect(attack.code).toBe('42501');
  });
});

// Error redaction: an error raised by a row the caller cannot see (a cascade, a trigger) never shows its hidden values.
// Corpus: corpus/attacks/error-redaction.yaml.
import type pg from 'pg';
import { describe, expect, test } from 'vitest';
import { cascadeIntoCheckTables } from '../../helpers/ddl.js';
import { useProxyFixture } from '../../helpers/proxy-fixture.js';

const fx = useProxyFixture({
  users: ['bob'],
  setup: `
    drop schema if exists atk_redaction cascade;
    create schema atk_redaction;
    ${cascadeIntoCheckTables('atk_redaction')}
  `,
  hidden: [{ schema: 'atk_redaction', table: 'child', column: 'secret' }],
  teardown: 'drop schema if exists atk_redaction cascade',
});
const { users } = fx;

describe('constraint failures in cascades', () => {
  test('fk-cascade-error-detail: the cascaded CHECK failure does not show the hidden value', async () => {
    await users.bob.query('begin');
    try {
      const err = await users.bob.query('update atk_redaction.parent set id = 102 where id = 1').then(
        () => null,
        (e: pg.DatabaseError) => e,
      );
      expect(JSON.stringify({ m: err?.message, d: err?.detail })).not.toContain('child-secret-1');
    } finally {
      await users.bob.query('rollback');
    }
  });
});

// pg-promise through pgwarden: introspection and a migration in a transaction (db.tx) as direct; alice's rows masked.
import pgPromise from 'pg-promise';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

const pgp = pgPromise();
const COLUMNS = `SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
  WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`;

async function withDb<T>(url: string, f: (db: pgPromise.IDatabase<unknown>) => Promise<T>): Promise<T> {
  const db = pgp({ connectionString: url, max: 1 });
  // The fixture's database is dropped at the end: an idle pooled connection may see 57P01 then.
  db.$pool.on('error', () => {});
  try {
    return await f(db);
  } finally {
    await db.$pool.end();
  }
}

describeTool(`pg-promise ${packageVersion('pg-promise')}`, 'orm_pgp', {
  introspect: (url) =>
    withDb(url, async (db) => ({
      columns: await db.any(COLUMNS, ['items']),
      views: await db.any("SELECT table_name FROM information_schema.views WHERE table_schema = 'public'"),
    })),
  migrate: (url) =>
    withDb(url, async (db) => {
      const up = await db.tx(async (t) => {
        await t.none('ALTER TABLE items ADD COLUMN note text DEFAULT $1', ['n']);
        await t.none('CREATE INDEX items_note ON items (note)');
        return [
          await t.any('SELECT id, note FROM items ORDER BY id'),
          await t.one('SELECT count(*)::int AS n FROM item_names'),
        ];
      });
      const mid = await db.any(COLUMNS, ['items']);
      await db.tx(async (t) => {
        await t.none('DROP INDEX items_note');
        await t.none('ALTER TABLE items DROP COLUMN note');
      });
      return { up, mid, after: await db.any(COLUMNS, ['items']) };
    }),
  restricted: (url) =>
    withDb(url, async (db) => {
      expect(await db.any('SELECT id, name, secret FROM items ORDER BY id')).toEqual(MASKED_ITEMS);
      expect(await db.one('SELECT count(*)::int AS n FROM item_names WHERE name LIKE $1', ['p%'])).toEqual({
        n: 2,
      });
      await expect(db.any('SELECT id FROM items WHERE secret = $1', ['s1'])).rejects.toMatchObject({
        code: '42501',
      });
    }),
});

// kysely through pgwarden: its introspection (getTables) and a migration in a transaction as direct; alice's rows masked.
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

// biome-ignore lint/suspicious/noExplicitAny: the fixture's tables are not typed here
type Db = Kysely<any>;

async function withDb<T>(url: string, f: (db: Db) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  // The fixture's database is dropped at the end: an idle pooled connection may see 57P01 then.
  pool.on('error', () => {});
  const db: Db = new Kysely({
    dialect: new PostgresDialect({ pool }),
  });
  try {
    return await f(db);
  } finally {
    await db.destroy();
  }
}

describeTool(`kysely ${packageVersion('kysely')}`, 'orm_kysely', {
  introspect: (url) => withDb(url, (db) => db.introspection.getTables({ withInternalKyselyTables: false })),
  migrate: (url) =>
    withDb(url, async (db) => {
      const up = await db.transaction().execute(async (tx) => {
        await tx.schema
          .alterTable('items')
          .addColumn('note', 'text', (c) => c.defaultTo('n'))
          .execute();
        await tx.schema.createIndex('items_note').on('items').column('note').execute();
        return [
          await tx.selectFrom('items').select(['id', 'note']).orderBy('id').execute(),
          await tx.selectFrom('item_names').select(sql<number>`count(*)::int`.as('n')).execute(),
        ];
      });
      await db.transaction().execute(async (tx) => {
        await tx.schema.dropIndex('items_note').execute();
        await tx.schema.alterTable('items').dropColumn('note').execute();
      });
      return { up, after: await db.introspection.getTables() };
    }),
  restricted: (url) =>
    withDb(url, async (db) => {
      expect(await db.selectFrom('items').select(['id', 'name', 'secret']).orderBy('id').execute()).toEqual(
        MASKED_ITEMS,
      );
      expect(
        await db
          .selectFrom('item_names')
          .where('name', 'like', 'p%')
          .select(sql<number>`count(*)::int`.as('n'))
          .execute(),
      ).toEqual([{ n: 2 }]);
      await expect(
        db.selectFrom('items').where('secret', '=', 's1').select('id').execute(),
      ).rejects.toMatchObject({
        code: '42501',
      });
    }),
});

// postgres.js through pgwarden: introspection and a migration in a transaction (sql.begin) as direct; alice's rows masked.
import postgres from 'postgres';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

async function withSql<T>(url: string, f: (sql: postgres.Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    return await f(sql);
  } finally {
    await sql.end();
  }
}

const plain = (rows: readonly unknown[]) => rows.map((r) => ({ ...(r as object) }));

describeTool(`postgres.js ${packageVersion('postgres')}`, 'orm_postgresjs', {
  introspect: (url) =>
    withSql(url, async (sql) => ({
      columns: plain(
        await sql`SELECT column_name, data_type, is_nullable FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name = 'items' ORDER BY ordinal_position`,
      ),
      types: plain(
        await sql`SELECT a.attname, a.atttypid::int FROM pg_attribute a WHERE a.attrelid = 'items'::regclass AND a.attnum > 0 ORDER BY a.attnum`,
      ),
    })),
  migrate: (url) =>
    withSql(url, async (sql) => {
      const up = await sql.begin(async (tx) => {
        await tx`ALTER TABLE items ADD COLUMN note text DEFAULT 'n'`;
        await tx`CREATE INDEX items_note ON items (note)`;
        return [
          plain(await tx`SELECT id, note FROM items ORDER BY id`),
          plain(await tx`SELECT count(*)::int AS n FROM item_names`),
        ];
      });
      await sql.begin(async (tx) => {
        await tx`DROP INDEX items_note`;
        await tx`ALTER TABLE items DROP COLUMN note`;
      });
      const after = plain(
        await sql`SELECT column_name FROM information_schema.columns WHERE table_name = 'items' ORDER BY ordinal_position`,
      );
      return { up, after };
    }),
  restricted: (url) =>
    withSql(url, async (sql) => {
      expect(plain(await sql`SELECT id, name, secret FROM items ORDER BY id`)).toEqual(MASKED_ITEMS);
      expect(plain(await sql`SELECT count(*)::int AS n FROM item_names WHERE name LIKE ${'p%'}`)).toEqual([
        { n: 2 },
      ]);
      await expect(sql`SELECT id FROM items WHERE secret = ${'s1'}`).rejects.toMatchObject({ code: '42501' });
    }),
});

// slonik through pgwarden: catalog introspection and a migration in a transaction on a table a view reads, as direct; alice's queries masked.
import { createPool, type DatabasePool, sql } from 'slonik';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

/** Runs `f` on a one-connection slonik pool (slonik resets each connection it takes back with DISCARD ALL). */
async function withPool<T>(url: string, f: (pool: DatabasePool) => Promise<T>): Promise<T> {
  const pool = await createPool(url, { maximumPoolSize: 1 });
  try {
    return await f(pool);
  } finally {
    await pool.end();
  }
}

/** The columns of `table` as information_schema lists them (bound parameters: slonik sends every value as one). */
const columns = (table: string) => sql.unsafe`
  SELECT column_name, data_type, is_nullable, column_default FROM information_schema.columns
   WHERE table_schema = 'public' AND table_name = ${table} ORDER BY ordinal_position`;

/** What a slonik user reads of the schema: columns, indexes and view definitions from the catalogs. */
async function introspect(url: string): Promise<unknown> {
  return withPool(url, async (pool) => ({
    columns: await pool.any(columns('items')),
    indexes: await pool.any(sql.unsafe`
      SELECT c.relname AS index, pg_get_indexdef(i.indexrelid) AS def
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE i.indrelid = ${'public.items'}::regclass ORDER BY 1`),
    views: await pool.any(sql.unsafe`
      SELECT table_name, view_definition FROM information_schema.views WHERE table_schema = 'public'`),
    tables: await pool.anyFirst(sql.unsafe`
      SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace
         AND relkind = ANY (${sql.array(['r', 'v'], 'char')}) ORDER BY 1`),
  }));
}

/** A migration up and down, each in one slonik transaction, on `items` (read by `item_names`). */
async function migrate(url: string): Promise<unknown> {
  return withPool(url, async (pool) => {
    const up = await pool.transaction(async (t) => {
      await t.query(sql.unsafe`ALTER TABLE items ADD COLUMN note text DEFAULT 'n'`);
      await t.query(sql.unsafe`CREATE INDEX items_note ON items (note)`);
      return [
        await t.any(sql.unsafe`SELECT id, note FROM items ORDER BY id`),
        await t.oneFirst(sql.unsafe`SELECT count(*)::int FROM item_names`),
      ];
    });
    const mid = await pool.any(columns('items'));
    await pool.transaction(async (t) => {
      await t.query(sql.unsafe`DROP INDEX items_note`);
      await t.query(sql.unsafe`ALTER TABLE items DROP COLUMN note`);
    });
    return { up, mid, after: await pool.any(columns('items')) };
  });
}

/** The SQLSTATE of a slonik error (it wraps pg's error as its cause). */
function sqlstate(e: unknown): string | undefined {
  const x = e as { code?: string; cause?: { code?: string } };
  return x.cause?.code ?? x.code;
}

async function restricted(url: string): Promise<void> {
  await withPool(url, async (pool) => {
    expect(await pool.any(sql.unsafe`SELECT id, name, secret FROM items ORDER BY id`)).toEqual(MASKED_ITEMS);
    expect(
      await pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM item_names WHERE name LIKE ${'p%'}`),
    ).toBe(2);
    expect(
      await pool.anyFirst(
        sql.unsafe`SELECT name FROM items WHERE id = ANY (${sql.array([1, 3], 'int4')}) ORDER BY id`,
      ),
    ).toEqual(['apple', 'plum']);
    const refused = await pool.any(sql.unsafe`SELECT id FROM items WHERE secret = ${'s1'}`).catch((e) => e);
    expect(sqlstate(refused)).toBe('42501');
  });
}

describeTool(`slonik ${packageVersion('slonik')}`, 'orm_slonik', { introspect, migrate, restricted });

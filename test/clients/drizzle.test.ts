// drizzle-kit pull (introspection into schema.ts) and drizzle-orm through pgwarden: the same files as direct, a migration in a transaction, alice's rows masked.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { integer, pgTable, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';
import { run } from '../helpers/run-program.js';

const KIT = path.join(process.cwd(), 'node_modules/.bin/drizzle-kit');
const items = pgTable('items', {
  id: integer('id').primaryKey(),
  name: text('name').notNull(),
  secret: text('secret'),
});

/** `drizzle-kit pull` into a fresh folder: the files it writes (schema.ts, relations.ts), by name. */
async function pull(url: string): Promise<Record<string, string>> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'drizzle-pull-'));
  try {
    const r = await run(KIT, ['pull', '--dialect=postgresql', `--url=${url}`, `--out=${out}`], {
      timeoutMs: 90_000,
    });
    if (r.code !== 0) throw new Error(`drizzle-kit pull exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
    const files: Record<string, string> = {};
    for (const f of fs.readdirSync(out))
      if (f.endsWith('.ts')) files[f] = fs.readFileSync(path.join(out, f), 'utf8');
    return files;
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

async function withDb<T>(url: string, f: (db: ReturnType<typeof drizzle>) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  pool.on('error', () => {});
  try {
    return await f(drizzle(pool));
  } finally {
    await pool.end();
  }
}

describeTool(
  `drizzle-kit ${packageVersion('drizzle-kit')} + drizzle-orm ${packageVersion('drizzle-orm')}`,
  'orm_drizzle',
  {
    introspect: async (url) => {
      const files = await pull(url);
      expect(files['schema.ts']).toContain('export const items = pgTable("items"');
      return files;
    },
    migrate: (url) =>
      withDb(url, async (db) => {
        // What drizzle-kit migrate runs: each migration's statements in one transaction.
        const up = await db.transaction(async (tx) => {
          await tx.execute(sql`ALTER TABLE "items" ADD COLUMN "note" text DEFAULT 'n'`);
          await tx.execute(sql`CREATE INDEX "items_note" ON "items" USING btree ("note")`);
          return [
            (await tx.execute(sql`SELECT id, note FROM items ORDER BY id`)).rows,
            (await tx.execute(sql`SELECT count(*)::int AS n FROM item_names`)).rows,
          ];
        });
        await db.transaction(async (tx) => {
          await tx.execute(sql`DROP INDEX "items_note"`);
          await tx.execute(sql`ALTER TABLE "items" DROP COLUMN "note"`);
        });
        return up;
      }),
    restricted: (url) =>
      withDb(url, async (db) => {
        expect(
          await db
            .select({ id: items.id, name: items.name, secret: items.secret })
            .from(items)
            .orderBy(items.id),
        ).toEqual(MASKED_ITEMS);
        await expect(db.select().from(items).where(sql`${items.secret} = 's1'`)).rejects.toMatchObject({
          cause: { code: '42501' },
        });
      }),
  },
);

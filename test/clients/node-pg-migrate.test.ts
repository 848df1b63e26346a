// node-pg-migrate through pgwarden: a migration up and down in one transaction (its runner, advisory lock and bookkeeping table) as direct.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runner } from 'node-pg-migrate';
import pg from 'pg';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../helpers/clients/pg-migrate');

async function columns(url: string): Promise<unknown> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query(
      "SELECT column_name, data_type, column_default FROM information_schema.columns WHERE table_name = 'items' ORDER BY ordinal_position",
    );
    const v = await c.query('SELECT count(*)::int AS n FROM item_names');
    return { columns: r.rows, view: v.rows };
  } finally {
    await c.end();
  }
}

async function migrate(url: string, direction: 'up' | 'down'): Promise<unknown> {
  const ran = await runner({
    databaseUrl: url,
    dir: DIR,
    direction,
    migrationsTable: 'pgmigrations',
    singleTransaction: true,
    count: Number.POSITIVE_INFINITY,
    log: () => {},
    verbose: false,
  });
  return ran.map((m) => m.name);
}

describeTool(`node-pg-migrate ${packageVersion('node-pg-migrate')}`, 'orm_pgmigrate', {
  introspect: columns,
  migrate: async (url) => {
    const up = await migrate(url, 'up');
    const mid = await columns(url);
    const down = await migrate(url, 'down');
    return { up, mid, down, after: await columns(url) };
  },
  restricted: async (url) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      expect((await c.query('SELECT id, name, secret FROM items ORDER BY id')).rows).toEqual(MASKED_ITEMS);
      // A migration needs MANAGE: alice's runner is refused, and nothing changed.
      await expect(migrate(url, 'up')).rejects.toThrow(/permission denied for database orm_pgmigrate/);
    } finally {
      await c.end();
    }
  },
});

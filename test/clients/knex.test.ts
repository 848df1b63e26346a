// knex through pgwarden: schema introspection and a migration in a transaction on a table a view reads, as direct; alice's queries masked.
import knexFactory, { type Knex } from 'knex';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

function connect(url: string): Knex {
  return knexFactory({ client: 'pg', connection: url, pool: { min: 0, max: 1 } });
}

/** What knex sees of the schema: columnInfo of the table, hasTable/hasColumn, and the view's rows. */
async function introspect(url: string): Promise<unknown> {
  const k = connect(url);
  try {
    return {
      columns: await k('items').columnInfo(),
      hasTable: await k.schema.hasTable('items'),
      hasView: await k.schema.hasTable('item_names'),
      hasColumn: await k.schema.hasColumn('items', 'secret'),
      view: await k('item_names').select('*').orderBy('id'),
    };
  } finally {
    await k.destroy();
  }
}

/** A migration up and down, each in one transaction (as knex's migrator runs them), on `items`. */
async function migrate(url: string): Promise<unknown> {
  const k = connect(url);
  try {
    const out: unknown[] = [];
    await k.transaction(async (tx) => {
      await tx.schema.alterTable('items', (t) => {
        t.string('note', 40).defaultTo('n');
        t.index(['note'], 'items_note');
      });
      out.push(await tx('items').select('id', 'note').orderBy('id'));
      out.push(await tx('item_names').count({ n: '*' }));
    });
    out.push(Object.keys(await k('items').columnInfo()));
    await k.transaction(async (tx) => {
      await tx.schema.alterTable('items', (t) => {
        t.dropIndex(['note'], 'items_note');
        t.dropColumn('note');
      });
    });
    out.push(Object.keys(await k('items').columnInfo()));
    return out;
  } finally {
    await k.destroy();
  }
}

async function restricted(url: string): Promise<void> {
  const k = connect(url);
  try {
    expect(await k('items').select('id', 'name', 'secret').orderBy('id')).toEqual(MASKED_ITEMS);
    expect(await k('item_names').where('name', 'like', 'p%').count({ n: '*' })).toEqual([{ n: '2' }]);
    await expect(k('items').where('secret', 's1').select('id')).rejects.toMatchObject({ code: '42501' });
  } finally {
    await k.destroy();
  }
}

describeTool(`knex ${packageVersion('knex')}`, 'orm_knex', { introspect, migrate, restricted });

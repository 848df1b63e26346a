// typeorm through pgwarden: its query runner's table introspection and a migration in a transaction as direct; alice's rows masked.
import { DataSource, EntitySchema, type QueryRunner, TableColumn, TableIndex } from 'typeorm';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

const Item = new EntitySchema<{ id: number; name: string; secret: string | null }>({
  name: 'items',
  columns: {
    id: { type: Number, primary: true },
    name: { type: String },
    secret: { type: String, nullable: true },
  },
});

async function withRunner<T>(url: string, f: (qr: QueryRunner, ds: DataSource) => Promise<T>): Promise<T> {
  const ds = new DataSource({ type: 'postgres', url, entities: [Item], poolSize: 1, logging: false });
  await ds.initialize();
  const qr = ds.createQueryRunner();
  try {
    return await f(qr, ds);
  } finally {
    await qr.release();
    await ds.destroy();
  }
}

function describeTable(t: Awaited<ReturnType<QueryRunner['getTable']>>): unknown {
  return {
    columns: t?.columns.map((c) => [c.name, c.type, c.isNullable, c.default, c.isPrimary]),
    indices: t?.indices.map((i) => [i.name, i.columnNames]),
  };
}

describeTool(`typeorm ${packageVersion('typeorm')}`, 'orm_typeorm', {
  introspect: (url) =>
    withRunner(url, async (qr) => ({
      items: describeTable(await qr.getTable('items')),
      view: (await qr.getView('item_names'))?.name,
      hasTable: await qr.hasTable('items'),
    })),
  migrate: (url) =>
    withRunner(url, async (qr) => {
      await qr.startTransaction();
      await qr.addColumn('items', new TableColumn({ name: 'note', type: 'text', default: "'n'" }));
      await qr.createIndex('items', new TableIndex({ name: 'items_note', columnNames: ['note'] }));
      const up = await qr.query('SELECT id, note FROM items ORDER BY id');
      await qr.commitTransaction();
      const mid = describeTable(await qr.getTable('items'));
      await qr.startTransaction();
      await qr.dropIndex('items', 'items_note');
      await qr.dropColumn('items', 'note');
      await qr.commitTransaction();
      return { up, mid, after: describeTable(await qr.getTable('items')) };
    }),
  restricted: (url) =>
    withRunner(url, async (_qr, ds) => {
      const repo = ds.getRepository(Item);
      expect(
        await repo.find({ select: { id: true, name: true, secret: true }, order: { id: 'ASC' } }),
      ).toEqual(MASKED_ITEMS);
      await expect(repo.findBy({ secret: 's1' })).rejects.toMatchObject({ code: '42501' });
    }),
});

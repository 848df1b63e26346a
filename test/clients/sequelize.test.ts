// sequelize through pgwarden: describeTable/showAllTables, a migration in a transaction via queryInterface, findOrCreate, and alice's masks.
import { DataTypes, Sequelize } from 'sequelize';
import { expect } from 'vitest';
import { describeTool, packageVersion } from '../helpers/clients/describe-tool.js';
import { MASKED_ITEMS } from '../helpers/clients/orm-fixture.js';

async function withDb<T>(url: string, f: (s: Sequelize) => Promise<T>): Promise<T> {
  const s = new Sequelize(url, { logging: false, pool: { max: 1, min: 0 } });
  try {
    return await f(s);
  } finally {
    await s.close();
  }
}

function model(s: Sequelize) {
  return s.define(
    'item',
    {
      id: { type: DataTypes.INTEGER, primaryKey: true, autoIncrement: true },
      name: DataTypes.TEXT,
      secret: DataTypes.TEXT,
    },
    { tableName: 'items', timestamps: false },
  );
}

describeTool(`sequelize ${packageVersion('sequelize')}`, 'orm_sequelize', {
  introspect: (url) =>
    withDb(url, async (s) => {
      const qi = s.getQueryInterface();
      return {
        tables: await qi.showAllTables(),
        items: await qi.describeTable('items'),
        indexes: await qi.showIndex('items'),
      };
    }),
  migrate: (url) =>
    withDb(url, async (s) => {
      const qi = s.getQueryInterface();
      await s.transaction(async (transaction) => {
        await qi.addColumn('items', 'note', { type: DataTypes.TEXT, defaultValue: 'n' }, { transaction });
        await qi.addIndex('items', ['note'], { name: 'items_note', transaction });
      });
      const mid = await qi.describeTable('items');
      await s.transaction(async (transaction) => {
        await qi.removeIndex('items', 'items_note', { transaction });
        await qi.removeColumn('items', 'note', { transaction });
      });
      // findOrCreate: a temporary function and the SELECT that calls it, in one string.
      const Item = model(s);
      const [found, created] = await Item.findOrCreate({ where: { name: 'fig' }, defaults: { secret: 'f' } });
      const again = await Item.findOrCreate({ where: { name: 'fig' }, defaults: { secret: 'f' } });
      await Item.destroy({ where: { name: 'fig' } });
      return {
        mid,
        after: await qi.describeTable('items'),
        created,
        name: found.get('name'),
        again: again[1],
      };
    }),
  restricted: (url) =>
    withDb(url, async (s) => {
      const Item = model(s);
      const rows = await Item.findAll({
        attributes: ['id', 'name', 'secret'],
        order: [['id', 'ASC']],
        raw: true,
      });
      expect(rows).toEqual(MASKED_ITEMS);
      expect(await Item.count({ where: { name: 'pear' } })).toBe(1);
      await expect(Item.findAll({ where: { secret: 's1' } })).rejects.toMatchObject({
        original: { code: '42501' },
      });
    }),
});

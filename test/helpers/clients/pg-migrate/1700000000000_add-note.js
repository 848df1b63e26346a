// A node-pg-migrate migration on `items`, which the view `item_names` reads: a column and an index, and their removal.
export const up = (pgm) => {
  pgm.addColumn('items', { note: { type: 'text', default: 'n' } });
  pgm.createIndex('items', 'note', { name: 'items_note' });
};

export const down = (pgm) => {
  pgm.dropIndex('items', 'note', { name: 'items_note' });
  pgm.dropColumn('items', 'note');
};

// The database every ORM and migration-tool suite works on: a table a view reads, a hidden column, direct and proxied URLs.
import { DEMO_APP_ROLE } from '../../../src/embedded/demo.js';
import { appClient, appUrl, driverConfig, dropDatabase, freshDatabase } from '../drivers/tools.js';
import { startTestProxy, type TestProxy } from '../proxy.js';

/** The schema each tool starts from: `items` (read by the view `item_names`) with `secret` hidden from alice. */
export const FIXTURE_SQL = `
CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL, secret text, created date DEFAULT '2026-01-01');
CREATE INDEX items_name ON items (name);
CREATE VIEW item_names AS SELECT id, name FROM items;
INSERT INTO items (name, secret) VALUES ('apple', 's1'), ('pear', 's2'), ('plum', NULL);
`;

/** One tool's database, reachable directly (the proxy's own login) and through a proxy. */
export interface OrmFixture {
  readonly database: string;
  readonly proxy: TestProxy;
  /** postgres:// URL of the upstream, as the proxy's own login (what "direct" means in these suites). */
  readonly direct: string;
  /** postgres:// URL through pgwarden as `user` (dba: every action and MANAGE; alice: SELECT, `items.secret` hidden). */
  via(user: 'dba' | 'alice'): string;
  close(): Promise<void>;
}

/**
 * Creates `database` afresh with {@link FIXTURE_SQL} and starts a proxy whose config rules it:
 * dba every action (MANAGE included), alice (analyst) SELECT and SEE but not `items.secret`.
 */
export async function ormFixture(database: string): Promise<OrmFixture> {
  await freshDatabase(database, false);
  const app = await appClient(database);
  try {
    await app.query(FIXTURE_SQL);
  } finally {
    await app.end();
  }
  const cfg = driverConfig([database]);
  const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
  roles.analyst?.permissions.push(
    { effect: 'allow', actions: ['SELECT', 'SEE'], database },
    { effect: 'deny', actions: ['SEE'], database, schema: 'public', table: 'items', column: 'secret' },
  );
  const proxy = await startTestProxy(cfg);
  return {
    database,
    proxy,
    direct: appUrl(database),
    via: (user) => proxy.url(user, user, database),
    close: async () => {
      await proxy.close();
      await dropDatabase(database).catch(() => undefined);
    },
  };
}

/** The login a direct run uses (the proxy's upstream login owns the fixture database). */
export const DIRECT_ROLE = DEMO_APP_ROLE;

/** What a tool suite gives {@link describeTool}: three runs, each returning what the tool saw. */
export interface ToolScenario {
  /** The tool's schema introspection of the fixture database. */
  readonly introspect: (url: string) => Promise<unknown>;
  /**
   * A migration up and down inside a transaction on `items` (which `item_names` reads), run
   * directly and through pgwarden as dba: both must give the same results.
   */
  readonly migrate: (url: string) => Promise<unknown>;
  /** alice's queries through pgwarden: `items.secret` comes back masked, nothing else refused (it asserts itself). */
  readonly restricted: (url: string) => Promise<void>;
}

/** The rows alice reads from `items` (id, name, secret) through any tool. */
export const MASKED_ITEMS = [
  { id: 1, name: 'apple', secret: '*****' },
  { id: 2, name: 'pear', secret: '*****' },
  { id: 3, name: 'plum', secret: '*****' },
];

// Seed 000's row-level security example, verbatim, under roles: managed: pg_has_role(current_user, …) answers per viewer.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE } from '../../src/embedded/demo.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';

const DB = 'rls_seed';

function client(user: string, password: string, database: string): pg.Client {
  const { host, port } = inject('pg');
  return new pg.Client({ host, port, user, password, database });
}

/** Seed 000 "Row-level security per viewer": app_user (default, everyone), sales_emea, sales_amer. */
function config(): Record<string, unknown> {
  const read = [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: DB }];
  return {
    listen: '127.0.0.1:0',
    mode: 'proxified',
    demo: true,
    limits: { auth_failure_delay_ms: 10, shutdown_grace_ms: 2000 },
    databases: {
      [DB]: {
        url: `postgres://${DEMO_APP_ROLE}:\${PGWARDEN_UPSTREAM_PASSWORD}@127.0.0.1:\${PGWARDEN_UPSTREAM_PORT}/${DB}`,
        roles: 'managed',
      },
    },
    users: {
      emma: { password: 'emma' },
      amos: { password: 'amos' },
      bea: { password: 'bea' },
      nina: { password: 'nina' },
      svc: { password: 'svc' },
    },
    default_role: 'app_user',
    roles: {
      app_user: { tenants: ['*'], permissions: read },
      sales_emea: { tenants: ['u/emma', 'u/bea'], permissions: read },
      sales_amer: { tenants: ['u/amos', 'u/bea'], permissions: read },
      service: {
        tenants: ['u/svc'],
        permissions: [{ effect: 'allow', actions: ['connect_as_viewer'] }],
      },
    },
  };
}

let proxy: TestProxy;
beforeAll(async () => {
  const { superuser, superuserPassword } = inject('pg');
  const su = client(superuser, superuserPassword, 'postgres');
  await su.connect();
  await su.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
  await su.query(`CREATE DATABASE ${DB} OWNER ${DEMO_APP_ROLE}`);
  await su.end();
  const app = client(DEMO_APP_ROLE, DEMO_APP_PASSWORD, DB);
  await app.connect();
  await app.query('CREATE TABLE orders (id int PRIMARY KEY, region text NOT NULL, amount int)');
  await app.query(
    "INSERT INTO orders VALUES (1, 'emea', 10), (2, 'amer', 20), (3, 'emea', 30), (4, 'apac', 40)",
  );
  // The proxy makes the workspace roles at start; the policies name them as text.
  proxy = await startTestProxy(config());
  // Seed 000, "Row-level security per viewer", verbatim.
  await app.query(`ALTER TABLE orders ENABLE ROW LEVEL SECURITY;

CREATE POLICY emea ON orders FOR SELECT
  USING (region = 'emea' AND pg_has_role(current_user, 'sales_emea', 'member'));

CREATE POLICY amer ON orders FOR SELECT
  USING (region = 'amer' AND pg_has_role(current_user, 'sales_amer', 'member'));`);
  await app.end();
});
afterAll(async () => {
  await proxy?.close();
});

async function regions(user: string, options?: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: proxy.url(user, user, DB), ...(options ? { options } : {}) });
  await c.connect();
  try {
    const r = await c.query<{ id: number; region: string }>('SELECT * FROM orders ORDER BY id');
    return r.rows.map((x) => `${x.id}:${x.region}`);
  } finally {
    await c.end();
  }
}

describe("seed 000's RLS policy under roles: managed", () => {
  test('a viewer in sales_emea gets the EMEA rows, in both roles both regions, in neither none', async () => {
    expect(await regions('emma')).toEqual(['1:emea', '3:emea']);
    expect(await regions('amos')).toEqual(['2:amer']);
    expect(await regions('bea')).toEqual(['1:emea', '2:amer', '3:emea']);
    expect(await regions('nina')).toEqual([]);
  });

  test('through one service principal connecting as each viewer', async () => {
    expect(await regions('svc', '-c pgwarden.viewer=emma')).toEqual(['1:emea', '3:emea']);
    expect(await regions('svc', '-c pgwarden.viewer=bea')).toEqual(['1:emea', '2:amer', '3:emea']);
    expect(await regions('svc', '-c pgwarden.viewer=nina')).toEqual([]);
  });

  test('through a connection that names the role', async () => {
    expect(await regions('bea', '-c pgwarden.role=sales_emea')).toEqual(['1:emea', '3:emea']);
    expect(await regions('bea', '-c pgwarden.role=sales_amer')).toEqual(['2:amer']);
    expect(await regions('svc', '-c pgwarden.viewer=bea -c pgwarden.role=sales_amer')).toEqual(['2:amer']);
  });

  test('pgwarden.identity and pgwarden.roles stay', async () => {
    const c = new pg.Client({
      connectionString: proxy.url('svc', 'svc', DB),
      options: '-c pgwarden.viewer=bea',
    });
    await c.connect();
    try {
      const r = await c.query(
        "SELECT current_setting('pgwarden.identity') AS identity, current_setting('pgwarden.roles') AS roles",
      );
      expect(r.rows).toEqual([{ identity: 'bea', roles: 'app_user,sales_emea,sales_amer' }]);
    } finally {
      await c.end();
    }
  });
});

// roles: managed under bad input and faults (issue 17): no CREATEROLE, tables it cannot grant, a failed sync, lost passwords, sweeps.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE } from '../../src/embedded/demo.js';
import { loadTestConfig, startTestProxy, type TestProxy } from '../helpers/proxy.js';

const DB = 'mr_faults';
const PREFIX = 'mrf_';

function direct(user: string, password: string, database = DB): pg.Client {
  const { host, port } = inject('pg');
  return new pg.Client({ host, port, user, password, database });
}

async function withClient<T>(c: pg.Client, f: (c: pg.Client) => Promise<T>): Promise<T> {
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

const su = () => direct(inject('pg').superuser, inject('pg').superuserPassword);
const app = () => direct(DEMO_APP_ROLE, DEMO_APP_PASSWORD);

function config(
  url = `postgres://${DEMO_APP_ROLE}:\${PGWARDEN_UPSTREAM_PASSWORD}@127.0.0.1:\${PGWARDEN_UPSTREAM_PORT}/${DB}`,
) {
  return {
    listen: '127.0.0.1:0',
    mode: 'proxified',
    demo: true,
    limits: { auth_failure_delay_ms: 10, shutdown_grace_ms: 2000 },
    databases: { [DB]: { url, roles: 'managed', role_prefix: PREFIX } },
    users: { rita: { password: 'rita' }, wes: { password: 'wes' }, boss: { password: 'boss' } },
    roles: {
      reader: {
        tenants: ['u/rita'],
        permissions: [
          { effect: 'allow', actions: ['SELECT', 'SEE'], database: DB },
          {
            effect: 'deny',
            actions: ['SEE'],
            database: DB,
            schema: 'public',
            table: 'items',
            column: 'cost',
          },
        ],
      },
      boss: {
        tenants: ['u/boss'],
        permissions: [
          {
            effect: 'allow',
            actions: ['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'MANAGE', 'SEE'],
            database: DB,
          },
        ],
      },
      writer: {
        tenants: ['u/wes'],
        permissions: [{ effect: 'allow', actions: ['SELECT', 'INSERT', 'SEE'], database: DB }],
      },
    },
  } as Record<string, unknown>;
}

async function currentUser(proxy: TestProxy, user: string): Promise<string> {
  const c = await proxy.client(user, user, DB);
  try {
    return (await c.query('select current_user as u')).rows[0].u as string;
  } finally {
    await c.end();
  }
}

async function refusal(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  return p.then(
    () => ({ message: 'no error' }),
    (e: pg.DatabaseError) => ({ code: e.code, message: e.message }),
  );
}

beforeAll(async () => {
  await withClient(direct(inject('pg').superuser, inject('pg').superuserPassword, 'postgres'), async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${DB} OWNER ${DEMO_APP_ROLE}`);
    await c.query('DROP ROLE IF EXISTS mrf_nocreate');
    await c.query("CREATE ROLE mrf_nocreate LOGIN PASSWORD 'nocreate'");
  });
  await withClient(app(), async (c) => {
    await c.query('CREATE TABLE items (id serial PRIMARY KEY, name text, cost int)');
    await c.query("INSERT INTO items (name, cost) VALUES ('saw', 12), ('nail', 1)");
  });
});

describe('roles: managed at start', () => {
  test('an administration login without CREATEROLE: a clear error naming roles: single', async () => {
    const url = `postgres://mrf_nocreate:nocreate@127.0.0.1:\${PGWARDEN_UPSTREAM_PORT}/${DB}`;
    const e = await refusal(startTestProxy(config(url)));
    expect(e.message).toContain(
      `database ${DB}: roles: managed needs an administration login with CREATEROLE`,
    );
    expect(e.message).toContain('"mrf_nocreate" lacks CREATEROLE');
    expect(e.message).toContain('set roles: single');
  });

  test('a table the administration login neither owns nor may grant: named with the missing privileges', async () => {
    await withClient(su(), (c) => c.query('CREATE TABLE foreign_owned (id int)'));
    try {
      const e = await refusal(startTestProxy(config()));
      expect(e.message).toContain(
        'can grant neither on public.foreign_owned (SELECT, INSERT, UPDATE, DELETE)',
      );
    } finally {
      await withClient(su(), (c) => c.query('DROP TABLE foreign_owned'));
    }
  });
});

describe('roles: managed faults', () => {
  let proxy: TestProxy;
  beforeAll(async () => {
    proxy = await startTestProxy(config());
  });
  afterAll(async () => {
    await proxy?.close();
  });

  test('role_prefix names the PostgreSQL roles; grants follow the rules (the sequence of a serial for INSERT)', async () => {
    const rita = await currentUser(proxy, 'rita');
    const wes = await currentUser(proxy, 'wes');
    const r = await withClient(su(), (c) =>
      c.query(
        `SELECT r.rolname::text AS login, ARRAY(SELECT g.rolname::text FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid) AS member_of,
                has_column_privilege(r.oid, 'items'::regclass, 'cost', 'SELECT') AS cost,
                has_column_privilege(r.oid, 'items'::regclass, 'name', 'SELECT') AS name,
                has_column_privilege(r.oid, 'items'::regclass, 'name', 'INSERT') AS ins,
                has_sequence_privilege(r.oid, 'items_id_seq'::regclass, 'USAGE') AS seq
           FROM pg_roles r WHERE r.rolname = ANY($1) ORDER BY r.rolname = $2 DESC`,
        [[rita, wes], rita],
      ),
    );
    expect(r.rows).toEqual([
      { login: rita, member_of: ['mrf_reader'], cost: false, name: true, ins: false, seq: false },
      { login: wes, member_of: ['mrf_writer'], cost: true, name: true, ins: true, seq: true },
    ]);
    const c = await proxy.client('wes', 'wes', DB);
    await c.query("INSERT INTO items (name, cost) VALUES ('glue', 3)");
    await c.end();
  });

  test('a set login whose password was changed behind pgwarden: taken back on next use', async () => {
    const login = await currentUser(proxy, 'rita');
    await withClient(su(), (c) => c.query(`ALTER ROLE ${login} PASSWORD 'changed-behind-its-back'`));
    expect(await currentUser(proxy, 'rita')).toBe(login);
    const row = await withClient(su(), (c) =>
      c.query('SELECT password FROM pgwarden.role_set_logins WHERE login = $1', [login]),
    );
    expect(row.rows[0].password).not.toBe('changed-behind-its-back');
  });

  test('a login without a row is taken back with a new password by the next instance that uses it', async () => {
    const login = await currentUser(proxy, 'rita');
    const before = await withClient(su(), (c) =>
      c.query('DELETE FROM pgwarden.role_set_logins WHERE login = $1 RETURNING password', [login]),
    );
    const other = await startTestProxy(config());
    try {
      expect(await currentUser(other, 'rita')).toBe(login);
      const after = await withClient(su(), (c) =>
        c.query('SELECT password FROM pgwarden.role_set_logins WHERE login = $1', [login]),
      );
      expect(after.rows[0].password).not.toBe(before.rows[0].password);
      // The first instance's password is stale now: it reads the row again and logs in.
      expect(await currentUser(proxy, 'rita')).toBe(login);
    } finally {
      await other.close();
    }
  });

  test('two instances syncing at once are serialized, with no error', async () => {
    const other = await startTestProxy(config());
    try {
      await Promise.all([
        proxy.server.managed.sync(DB),
        other.server.managed.sync(DB),
        proxy.server.managed.sync(DB),
        other.server.managed.sync(DB),
      ]);
      expect(proxy.server.managed.failureOf(DB)).toBeUndefined();
      expect(other.server.managed.failureOf(DB)).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  test('a sync that fails halfway is rolled back, the previous grants stand, new sessions are refused until a sync succeeds', async () => {
    const rita = await currentUser(proxy, 'rita');
    const open = await proxy.client('rita', 'rita', DB);
    // The database refuses GRANTs while poison_switch has a row (an event trigger, made by a superuser).
    await withClient(su(), (c) =>
      c.query(`CREATE TABLE public.poison_switch (on_ boolean);
        CREATE FUNCTION public.poison_grants() RETURNS event_trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
        BEGIN IF EXISTS (SELECT 1 FROM public.poison_switch) THEN RAISE EXCEPTION 'grants are poisoned'; END IF; END $$;
        CREATE EVENT TRIGGER poison_grants ON ddl_command_end WHEN TAG IN ('GRANT') EXECUTE FUNCTION public.poison_grants();
        INSERT INTO public.poison_switch VALUES (true);`),
    );
    try {
      // DDL through pgwarden (a MANAGE role, logged in as the url login) makes the catalog be read again.
      const boss = await proxy.client('boss', 'boss', DB);
      expect((await boss.query('select current_user as u')).rows).toEqual([{ u: DEMO_APP_ROLE }]);
      await boss.query('CREATE TABLE fresh (id int)');
      await boss.end();
      // The new rules revoke SELECT on items.name (a REVOKE runs first) and grant on fresh (fails).
      const next = config();
      const reader = (next.roles as Record<string, { permissions: unknown[] }>).reader as {
        permissions: unknown[];
      };
      reader.permissions.push({
        effect: 'deny',
        actions: ['SEE'],
        database: DB,
        schema: 'public',
        table: 'items',
        column: 'name',
      });
      proxy.server.reload(loadTestConfig(next));
      await proxy.server.managed.sync(DB);
      expect(proxy.server.managed.failureOf(DB)).toMatch(/grants are poisoned/);
      const granted = await withClient(su(), (c) =>
        c.query(
          `SELECT has_column_privilege($1, 'fresh', 'id', 'SELECT') AS fresh, has_column_privilege($1, 'items', 'name', 'SELECT') AS name`,
          [rita],
        ),
      );
      expect(granted.rows).toEqual([{ fresh: false, name: true }]);
      // The open session goes on under the previous grants; a new one is refused, clearly.
      expect((await open.query('select id from items order by id limit 1')).rows).toEqual([{ id: 1 }]);
      const e = await refusal(proxy.client('rita', 'rita', DB));
      expect(e.code).toBe('57P03');
      expect(e.message).toBe(
        `pgwarden cannot bring the grants of database "${DB}" up to date; connections are refused until it can (see the proxy log)`,
      );
      await withClient(su(), (c) => c.query('DELETE FROM public.poison_switch'));
      await proxy.server.managed.sync(DB);
      expect(proxy.server.managed.failureOf(DB)).toBeUndefined();
      const after = await withClient(su(), (c) =>
        c.query(
          `SELECT has_column_privilege($1, 'fresh', 'id', 'SELECT') AS fresh, has_column_privilege($1, 'items', 'name', 'SELECT') AS name`,
          [rita],
        ),
      );
      expect(after.rows).toEqual([{ fresh: true, name: false }]);
      expect(await currentUser(proxy, 'rita')).toBe(rita);
    } finally {
      await open.end();
      await withClient(su(), (c) =>
        c.query(
          'DROP EVENT TRIGGER poison_grants; DROP FUNCTION public.poison_grants(); DROP TABLE public.poison_switch',
        ),
      );
      proxy.server.reload(loadTestConfig(config()));
      await proxy.server.managed.sync(DB);
    }
  });

  test('the sweep drops logins unused for 30 days (this workspace’s rows only), made again on demand', async () => {
    const login = await currentUser(proxy, 'wes');
    await withClient(su(), async (c) => {
      await c.query(
        "UPDATE pgwarden.role_set_logins SET last_used_at = now() - interval '31 days' WHERE login = $1",
        [login],
      );
      await c.query(
        `INSERT INTO pgwarden.role_set_logins (login, workspace, roles, role_oids, password, last_used_at)
         VALUES ('pgwarden_set_otherworkspace', 'other_', '{x}', '{1}', 'p', now() - interval '99 days')`,
      );
    });
    const dropped = await proxy.server.managed.sweep();
    expect(dropped).toEqual([login]);
    const left = await withClient(su(), (c) =>
      c.query(
        'SELECT (SELECT count(*)::int FROM pg_roles WHERE rolname = $1) AS role, (SELECT array_agg(login::text ORDER BY login) FROM pgwarden.role_set_logins) AS rows',
        [login],
      ),
    );
    expect(left.rows[0].role).toBe(0);
    expect(left.rows[0].rows).not.toContain(login);
    expect(left.rows[0].rows).toContain('pgwarden_set_otherworkspace');
    expect(await currentUser(proxy, 'wes')).toBe(login);
  });

  test('removing a role retires its set logins and closes their sessions', async () => {
    const login = await currentUser(proxy, 'wes');
    const open = await proxy.client('wes', 'wes', DB);
    const closed = new Promise<string>((resolve) => open.on('error', (e) => resolve(e.message)));
    const next = config();
    (next.roles as Record<string, unknown>).writer = undefined;
    delete (next.roles as Record<string, unknown>).writer;
    (next.users as Record<string, unknown>).wes = { password: 'wes' };
    proxy.server.reload(loadTestConfig(next));
    expect(await closed).toMatch(/roles|access|role/);
    await proxy.server.managed.sync(DB);
    const r = await withClient(su(), (c) =>
      c.query(
        'SELECT (SELECT count(*)::int FROM pg_roles WHERE rolname = $1) AS role, (SELECT count(*)::int FROM pgwarden.role_set_logins WHERE login = $1) AS row',
        [login],
      ),
    );
    expect(r.rows).toEqual([{ role: 0, row: 0 }]);
  });
});

// roles: managed (issue 17): workspace roles are PostgreSQL roles, sessions log in as set logins, grants follow the rules.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import { demoConfigObject, startTestProxy, type TestProxy } from '../helpers/proxy.js';

/** The demo config with the demo's own role names (no test prefix). */
function managedDemo(): Record<string, unknown> {
  const cfg = demoConfigObject();
  const dbs = cfg.databases as Record<string, Record<string, unknown>>;
  expect(dbs.demo?.roles).toBe('managed');
  delete dbs.demo?.role_prefix;
  return cfg;
}

async function superuser(database = 'demo'): Promise<pg.Client> {
  const { host, port, superuser, superuserPassword } = inject('pg');
  const c = new pg.Client({ host, port, user: superuser, password: superuserPassword, database });
  await c.connect();
  return c;
}

let proxy: TestProxy;
let admin: pg.Client;
const logLines: Record<string, unknown>[] = [];
beforeAll(async () => {
  proxy = await startTestProxy(managedDemo(), { logLines });
  admin = await superuser();
});
afterAll(async () => {
  await proxy?.close();
  await admin?.end();
});

describe('roles: managed', () => {
  test('each workspace role is a NOLOGIN PostgreSQL role', async () => {
    const r = await admin.query(
      `SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY($1) ORDER BY rolname`,
      [['analyst', 'dba', 'support']],
    );
    expect(r.rows).toEqual([
      { rolname: 'analyst', rolcanlogin: false },
      { rolname: 'dba', rolcanlogin: false },
      { rolname: 'support', rolcanlogin: false },
    ]);
  });

  test("alice's upstream session runs as her set login, a member of analyst only", async () => {
    const c = await proxy.client('alice');
    try {
      const r = await c.query('select current_user as u');
      const login = r.rows[0].u as string;
      expect(login).toMatch(/^pgwarden_set_[0-9a-f]{24}$/);
      const m = await admin.query(
        `SELECT r.rolcanlogin, r.rolinherit,
                ARRAY(SELECT g.rolname::text FROM pg_auth_members a JOIN pg_roles g ON g.oid = a.roleid WHERE a.member = r.oid) AS member_of
           FROM pg_roles r WHERE rolname = $1`,
        [login],
      );
      expect(m.rows).toEqual([{ rolcanlogin: true, rolinherit: false, member_of: ['analyst'] }]);
      expect((await c.query('select id, name from users order by id limit 2')).rows).toEqual([
        { id: 1, name: 'Ada Tervo' },
        { id: 2, name: 'Bram Wendt' },
      ]);
    } finally {
      await c.end();
    }
  });

  test('the audit line names the set login', async () => {
    const c = await proxy.client('alice');
    let login: string;
    try {
      login = (await c.query('select current_user as u')).rows[0].u as string;
      await c.query('select id from orgs order by id limit 1');
    } finally {
      await c.end();
    }
    const line = logLines.find((l) => l.audit === true && String(l.sql).includes('from orgs'));
    expect(line).toMatchObject({ identity: 'alice', login, decision: 'allowed' });
  });

  test('a MANAGE role logs in as the url login', async () => {
    const c = await proxy.client('dba');
    try {
      expect((await c.query('select current_user as u')).rows).toEqual([{ u: 'pgwarden_app' }]);
    } finally {
      await c.end();
    }
  });

  test('the set login holds SELECT on the visible columns only', async () => {
    const c = await proxy.client('alice');
    const login = (await c.query('select current_user as u')).rows[0].u as string;
    await c.end();
    const r = await admin.query(
      `SELECT a.attname::text AS col, has_column_privilege($1, 'public.users'::regclass, a.attnum, 'SELECT') AS sel
         FROM pg_attribute a WHERE a.attrelid = 'public.users'::regclass AND a.attnum > 0 ORDER BY a.attnum`,
      [login],
    );
    expect(r.rows).toEqual([
      { col: 'id', sel: true },
      { col: 'name', sel: true },
      { col: 'email', sel: false },
      { col: 'ssn', sel: false },
      { col: 'org_id', sel: true },
    ]);
  });
});

// Connecting on behalf of a viewer (issue 8): the viewer's roles only, pgwarden.* settings, RLS per viewer, audit.
import pg from 'pg';
import { describe, expect, test } from 'vitest';
import { demoConfigObject } from '../helpers/proxy.js';
import { useProxyFixture } from '../helpers/proxy-fixture.js';

function config(): Record<string, unknown> {
  const cfg = demoConfigObject();
  const users = cfg.users as Record<string, unknown>;
  users.svc = { password: 'svc' };
  users.nobody = { password: 'nobody' };
  users.gone = { password: 'gone', disabled: true };
  const roles = cfg.roles as Record<string, unknown>;
  roles.service = {
    tenants: ['u/svc'],
    permissions: [
      { effect: 'allow', actions: ['connect_as_viewer'] },
      { effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' },
    ],
  };
  return cfg;
}

async function asViewer(user: string, viewer: string, extra = ''): Promise<pg.Client> {
  const c = new pg.Client({
    connectionString: fx.proxy.url(user),
    options: `-c pgwarden.viewer=${viewer}${extra}`,
  });
  await c.connect();
  return c;
}

async function refusedAtConnect(user: string, viewer: string): Promise<pg.DatabaseError> {
  return (await asViewer(user, viewer).then(
    async (c) => {
      await c.end();
      throw new Error('connected');
    },
    (e: pg.DatabaseError) => e,
  )) as pg.DatabaseError;
}

const fx = useProxyFixture({
  config,
  log: true,
  // The proxy logs in as the table owner: FORCE makes the policies apply to it too.
  setup: `
    drop table if exists regional;
    create table regional (id int primary key, region text not null);
    insert into regional values (1, 'emea'), (2, 'amer'), (3, 'emea');
    alter table regional enable row level security;
    alter table regional force row level security;
    create policy emea on regional for select using (region = 'emea' and 'analyst' = any (string_to_array(current_setting('pgwarden.roles', true), ',')));
    create policy amer on regional for select using (region = 'amer' and 'support' = any (string_to_array(current_setting('pgwarden.roles', true), ',')));
  `,
  teardown: 'drop table if exists regional',
});
const { logLines } = fx;

describe('a service principal reading as the viewer', () => {
  test('as alice: alice masks; as bob: bob may write', async () => {
    const a = await asViewer('svc', 'alice');
    const r = await a.query('select id, email from users where id = 1');
    expect(r.rows).toEqual([{ id: 1, email: '*****' }]);
    expect(
      (await a.query("select current_setting('pgwarden.identity') i, current_setting('pgwarden.roles') r"))
        .rows[0],
    ).toEqual({
      i: 'alice',
      r: 'analyst',
    });
    await expect(a.query("update orders set note = 'x' where id = 1")).rejects.toMatchObject({
      code: '42501',
    });
    await a.end();
    const b = await asViewer('svc', 'bob');
    await b.query('begin');
    expect((await b.query("update orders set note = 'x' where id = 1")).rowCount).toBe(1);
    await b.query('rollback');
    await b.end();
  });

  test('a named role with a viewer pins the connection to it when the viewer may use it', async () => {
    const c = await asViewer('svc', 'alice', ' -c pgwarden.role=analyst');
    expect((await c.query("select current_setting('pgwarden.roles') r")).rows[0].r).toBe('analyst');
    await c.end();
    const e = await asViewer('svc', 'alice', ' -c pgwarden.role=dba').then(
      () => null,
      (x: pg.DatabaseError) => x,
    );
    expect(e?.code).toBe('28000');
  });

  test('refused at connect: no permission, unknown or disabled viewer, viewer with no role', async () => {
    const noPermission = await refusedAtConnect('bob', 'alice');
    expect(noPermission.code).toBe('28000');
    expect(noPermission.message).toContain('connect_as_viewer');
    // Workspace admin status adds nothing: dba is an admin without the permission.
    expect((await refusedAtConnect('dba', 'alice')).code).toBe('28000');
    const unknown = await refusedAtConnect('svc', 'mallory');
    expect(unknown.code).toBe('28000');
    expect(unknown.message).toContain('viewer "mallory" is unknown or disabled');
    expect((await refusedAtConnect('svc', 'gone')).message).toContain('unknown or disabled');
    const noRole = await refusedAtConnect('svc', 'nobody');
    expect(noRole.code).toBe('28000');
    expect(noRole.message).toContain('resolves to no role');
  });

  test('pgwarden.* settings cannot be changed, whatever the roles', async () => {
    const c = await asViewer('svc', 'alice');
    await expect(c.query("set pgwarden.roles = 'dba'")).rejects.toMatchObject({ code: '42501' });
    await expect(c.query("select set_config('pgwarden.identity', 'dba', false)")).rejects.toMatchObject({
      code: '42501',
    });
    await c.end();
    const dba = await fx.proxy.client('dba');
    await expect(dba.query("set pgwarden.roles = 'analyst'")).rejects.toMatchObject({ code: '42501' });
    await expect(dba.query("set local pgwarden.identity = 'x'")).rejects.toMatchObject({ code: '42501' });
    await dba.end();
  });

  test('row-level security returns each viewer its rows through the same service principal, after DISCARD ALL too', async () => {
    const a = await asViewer('svc', 'alice');
    const b = await asViewer('svc', 'bob');
    const ids = async (c: pg.Client) =>
      (await c.query('select id from regional order by id')).rows.map((r) => r.id);
    expect(await ids(a)).toEqual([1, 3]);
    expect(await ids(b)).toEqual([2]);
    await a.query('discard all');
    await b.query('reset all');
    expect(await ids(a)).toEqual([1, 3]);
    expect(await ids(b)).toEqual([2]);
    await a.end();
    await b.end();
  });

  test('the audit line names the principal and the viewer', async () => {
    const c = await asViewer('svc', 'alice');
    await c.query('select id from orders where id = 2');
    await c.end();
    const line = logLines.find(
      (l) => l.audit === true && l.viewer === 'alice' && String(l.sql).startsWith('select id from orders'),
    );
    expect(line).toMatchObject({
      identity: 'svc',
      viewer: 'alice',
      roles: ['analyst'],
      decision: 'allowed',
      sql: 'select id from orders where id = $1',
    });
  });
});

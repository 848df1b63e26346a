// Issue 17 "How we will check it" on the demo itself (`pgwarden demo`, roles: managed): \du, current_user, the audit's login, seed 000's RLS per viewer.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type DemoProcess, startDemo } from '../helpers/demo-process.js';
import { psql } from '../helpers/psql.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-demo-roles-'));
let demo: DemoProcess;
const url = (user: string) => `postgres://${user}:${user}@127.0.0.1:${demo.port}/demo`;

/** `sql` as `user` through the demo's proxy: the rows. */
async function rows(user: string, sql: string): Promise<Record<string, unknown>[]> {
  const c = new pg.Client({ connectionString: url(user) });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}

/** The pretty audit blocks of the demo's log (`INFO: statement` and its indented fields), as text. */
function auditBlocks(): string[] {
  return demo
    .err()
    .split(/\n(?=\[\d\d:\d\d:\d\d\.\d+\] )/)
    .filter((b) => /^\[[^\]]+\] INFO: statement\n/.test(b) && b.includes('audit: true'));
}

beforeAll(async () => {
  demo = await startDemo(dir);
}, 180_000);
afterAll(async () => {
  expect(await demo?.stop()).toBe(0);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('the demo runs roles: managed', () => {
  let aliceLogin: string;
  let bobLogin: string;

  test("alice's and bob's upstream sessions run as their set logins", async () => {
    aliceLogin = (await rows('alice', 'select current_user as u'))[0]?.u as string;
    bobLogin = (await rows('bob', 'select current_user as u'))[0]?.u as string;
    expect(aliceLogin).toMatch(/^pgwarden_set_[0-9a-f]{24}$/);
    expect(bobLogin).toMatch(/^pgwarden_set_[0-9a-f]{24}$/);
    expect(bobLogin).not.toBe(aliceLogin);
    // dba holds MANAGE: the administration login, as before.
    expect(await rows('dba', 'select current_user as u')).toEqual([{ u: 'pgwarden_app' }]);
  });

  test('the audit line of her statement names her set login', async () => {
    await rows('alice', 'select name from orgs where id = 2');
    // The log reaches the pipe a moment after the reply reaches the client.
    let block: string | undefined;
    for (const end = Date.now() + 10_000; !block && Date.now() < end; )
      block =
        auditBlocks().find((b) => b.includes('select name from orgs where id = $1')) ??
        (await new Promise<undefined>((r) => setTimeout(r, 100)));
    expect(block).toContain('identity: "alice"');
    expect(block).toContain(`login: "${aliceLogin}"`);
  });

  test('\\du shows the workspace roles and the set logins', async () => {
    const r = await psql(url('alice'), ['-c', '\\du']);
    expect(r.stderr).toBe('');
    const line = (name: string) => r.stdout.split('\n').find((l) => l.trimStart().startsWith(`${name} `));
    for (const role of ['analyst', 'support', 'dba'])
      expect(line(role)).toMatch(new RegExp(`^ ${role}\\s+\\| No inheritance, Cannot login\\s+\\| \\{\\}$`));
    expect(line(aliceLogin)).toMatch(/\| No inheritance\s+\| \{analyst\}$/);
    expect(line(bobLogin)).toMatch(/\| No inheritance\s+\| \{support\}$/);
  });

  test("seed 000's RLS policy (with the demo's roles) returns per-viewer rows", async () => {
    // Made through pgwarden by dba (MANAGE): the grant sync after the DDL gives the set logins SELECT.
    const r = await psql(
      url('dba'),
      [],
      `CREATE TABLE regional_sales (id int PRIMARY KEY, region text NOT NULL, amount int);
INSERT INTO regional_sales VALUES (1, 'emea', 10), (2, 'amer', 20), (3, 'emea', 30), (4, 'apac', 40);
ALTER TABLE regional_sales ENABLE ROW LEVEL SECURITY;

CREATE POLICY emea ON regional_sales FOR SELECT
  USING (region = 'emea' AND pg_has_role(current_user, 'analyst', 'member'));

CREATE POLICY amer ON regional_sales FOR SELECT
  USING (region = 'amer' AND pg_has_role(current_user, 'support', 'member'));
`,
    );
    expect(r.stderr).toBe('');
    const regions = async (user: string) =>
      (await rows(user, 'SELECT id, region FROM regional_sales ORDER BY id')).map(
        (x) => `${x.id}:${x.region}`,
      );
    expect(await regions('alice')).toEqual(['1:emea', '3:emea']);
    expect(await regions('bob')).toEqual(['2:amer']);
    // The tables' owner (dba's login) is not subject to its own policies.
    expect(await regions('dba')).toEqual(['1:emea', '2:amer', '3:emea', '4:apac']);
  });
});

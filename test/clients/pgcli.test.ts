// pgcli (Debian's 3.5.0) through pgwarden: its start-up completion metadata, \dt and \d as a MANAGE user compared with direct, a migration in a transaction on a table a view reads; alice's masks.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { appClient, appUrl } from '../helpers/drivers/tools.js';
import { startTestProxy, type TestProxy } from '../helpers/proxy.js';
import { run } from '../helpers/run-program.js';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-pgcli-'));

/**
 * Runs `pgcli --less-chatty <url>` with `input` on stdin (pgcli 3.5 has no -e; prompt_toolkit reads
 * a pipe), its config and history under a scratch HOME. Output: stdout without terminal control
 * sequences, prompts and `Time:` lines; stderr as written (a failed completion-metadata query at
 * start shows there as the refresh thread's traceback).
 */
async function pgcli(url: string, input: string): Promise<{ stdout: string; stderr: string }> {
  const r = await run('pgcli', ['--less-chatty', '--prompt', 'PGCLI> ', url], {
    input,
    env: { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), TERM: 'dumb' },
    timeoutMs: 60_000,
    // A pause lets the completion refresh (pgcli's start-up metadata queries) run before \q.
    holdStdinMs: 3000,
  });
  const clean = r.stdout
    .replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r/g, '')
    .split('\n')
    .map((l) => l.replace(/^.*PGCLI> /, '').trimEnd())
    .filter((l) => l !== '' && !l.startsWith('Time:') && !l.includes('[F2]'))
    .join('\n');
  return { stdout: clean, stderr: r.stderr };
}

let proxy: TestProxy;
/** A table of this suite's own in the demo database, read by a view (what the migration alters). */
const TABLE = `pgcli_items_${process.pid}`;
beforeAll(async () => {
  proxy = await startTestProxy();
  const app = await appClient('demo');
  await app
    .query(
      `CREATE TABLE ${TABLE} (id int PRIMARY KEY, name text NOT NULL);
       CREATE VIEW ${TABLE}_names AS SELECT id, name FROM ${TABLE};
       INSERT INTO ${TABLE} VALUES (1, 'apple'), (2, 'pear');`,
    )
    .finally(() => app.end());
});
afterAll(async () => {
  await proxy?.close();
  const app = await appClient('demo');
  await app.query(`DROP TABLE IF EXISTS ${TABLE} CASCADE`).finally(() => app.end());
  fs.rmSync(home, { recursive: true, force: true });
});

const META = '\\dt\n\\d users\n\\dv\n\\df\n\\dn\n';

describe('pgcli 3.5 through pgwarden', () => {
  test('dba (MANAGE): \\dt, \\d users, \\dv, \\df, \\dn as direct; its start-up metadata queries all answered', async () => {
    const direct = await pgcli(appUrl('demo'), META);
    const through = await pgcli(proxy.url('dba'), META);
    expect(direct.stderr).not.toMatch(/Traceback|Exception|error/i);
    expect(through.stderr).not.toMatch(/Traceback|Exception|error/i);
    expect(direct.stdout).toContain('| public | users');
    expect(through.stdout).toBe(direct.stdout);
  }, 120_000);

  test('dba (MANAGE): a migration up and down in a transaction on a table a view reads, as direct', async () => {
    const migration = [
      'begin;',
      `alter table ${TABLE} add column note text default 'n';`,
      `create index ${TABLE}_note on ${TABLE} (note);`,
      `select id, note from ${TABLE} order by id;`,
      `select count(*) from ${TABLE}_names;`,
      `\\d ${TABLE}`,
      'commit;',
      'begin;',
      `drop index ${TABLE}_note;`,
      `alter table ${TABLE} drop column note;`,
      'commit;',
      `\\d ${TABLE}`,
      '',
    ].join('\n');
    const direct = await pgcli(appUrl('demo'), migration);
    const through = await pgcli(proxy.url('dba'), migration);
    expect(direct.stdout).toContain('| 2  | n    |');
    expect(through.stderr).not.toMatch(/Traceback|Exception|error/i);
    expect(through.stdout).toBe(direct.stdout);
  }, 120_000);

  test('alice: her start-up metadata queries are answered, \\d users as direct, hidden columns masked', async () => {
    const r = await pgcli(
      proxy.url('alice'),
      '\\d users\nselect id, name, email, ssn from users where id = 1;\nselect id from users where email is null;\n',
    );
    expect(r.stderr).not.toMatch(/Traceback|Exception/);
    expect(r.stdout).toMatch(/\| 1 +\| Ada Tervo +\| \*\*\*\*\* +\| \*\*\*\*\* +\|/);
    expect(r.stdout).toContain('is hidden from you');
    const direct = await pgcli(appUrl('demo'), '\\d users\n');
    expect(r.stdout.startsWith(direct.stdout)).toBe(true);
  }, 120_000);
});

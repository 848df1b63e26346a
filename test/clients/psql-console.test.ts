// The wire admin console with the real psql 15 (`psql -d pgwarden -c 'SHOW CLIENTS'`): PgBouncer's columns for an admin, 42501 naming the action for a user without it, KILL ending a psql session with FATAL 57P01.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startConsoleProxy } from '../helpers/console-proxy.js';
import { requireTool } from '../helpers/drivers/tools.js';
import { SHOW_CLIENTS_COLUMNS } from '../helpers/pgbouncer-columns.js';
import type { TestProxy } from '../helpers/proxy.js';
import { psql } from '../helpers/psql.js';

let proxy: TestProxy;
let reloads: () => number;

beforeAll(async () => {
  requireTool('psql 15', ['psql', '--version'], 'postgresql-client-15');
  ({ proxy, reloads } = await startConsoleProxy());
}, 60_000);
afterAll(async () => {
  await proxy?.close();
});

/** `psql -d pgwarden -c <command>` as `user`, unaligned with a tab between fields, errors with their SQLSTATE. */
function consoleCommand(user: string, command: string) {
  return psql(proxy.url(user, user, 'pgwarden'), [
    '-A',
    '-F',
    '\t',
    '-v',
    'VERBOSITY=verbose',
    '-c',
    command,
  ]);
}

/** The rows of psql's unaligned output (header first, the "(n rows)" footer dropped) as objects. */
function rowsOf(stdout: string): Record<string, string>[] {
  const lines = stdout.split('\n').filter((l) => l !== '' && !/^\(\d+ rows?\)$/.test(l));
  const header = (lines[0] ?? '').split('\t');
  return lines.slice(1).map((l) => {
    const cells = l.split('\t');
    return Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
  });
}

describe('psql -d pgwarden', () => {
  test("SHOW CLIENTS as a workspace admin: PgBouncer's column names, a row per logged-in session", async () => {
    // pg_sleep is outside the function allowlist: it needs MANAGE, which dba holds.
    const victim = spawn('psql', ['-X', proxy.url('dba', 'dba', 'demo'), '-c', 'select pg_sleep(30)']);
    try {
      // Waits until its statement runs.
      let rows: Record<string, string>[] = [];
      for (let i = 0; i < 100; i++) {
        const r = await consoleCommand('dba', 'SHOW CLIENTS');
        expect(r.code, r.stderr).toBe(0);
        const header = r.stdout.split('\n')[0];
        expect(header?.split('\t')).toEqual(SHOW_CLIENTS_COLUMNS);
        rows = rowsOf(r.stdout);
        // Listed from its authentication on; its database once its upstream session is open.
        if (rows.some((x) => x.database === 'demo' && x.state === 'active')) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(rows.find((x) => x.database === 'demo')).toMatchObject({
        type: 'C',
        user: 'dba',
        state: 'active',
        addr: '127.0.0.1',
        application_name: 'psql',
        roles: 'dba',
      });
      // The console connection itself is listed, without a server link.
      expect(rows.find((x) => x.database === 'pgwarden')).toMatchObject({ user: 'dba', link: '' });
    } finally {
      victim.kill('SIGKILL');
    }
  }, 60_000);

  test('SHOW CLIENTS without audit_read: ERROR 42501 naming the action; RELOAD and KILL without workspace_settings: 42501', async () => {
    const alice = await consoleCommand('alice', 'SHOW CLIENTS');
    expect(alice.code).toBe(1);
    expect(alice.stdout).toBe('');
    expect(alice.stderr).toContain(
      'ERROR:  42501: permission denied: SHOW CLIENTS needs the app-level action audit_read',
    );
    // bob holds audit_read: SHOW works, RELOAD and KILL do not.
    expect((await consoleCommand('bob', 'SHOW STATS')).code).toBe(0);
    const reload = await consoleCommand('bob', 'RELOAD');
    expect(reload.code).toBe(1);
    expect(reload.stderr).toContain(
      'ERROR:  42501: permission denied: RELOAD needs the app-level action workspace_settings',
    );
    const kill = await consoleCommand('bob', 'KILL 1');
    expect(kill.code).toBe(1);
    expect(kill.stderr).toContain(
      'ERROR:  42501: permission denied: KILL needs the app-level action workspace_settings',
    );
    expect(reloads()).toBe(0);
    const ok = await consoleCommand('dba', 'RELOAD');
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout.trim()).toBe('RELOAD');
    expect(reloads()).toBe(1);
  }, 60_000);

  test("KILL <id> as an admin ends that psql's session with FATAL 57P01", async () => {
    // A script on stdin (no ON_ERROR_STOP): after the canceled statement psql goes on and reads the FATAL.
    const victim = spawn('psql', ['-X', '-v', 'VERBOSITY=verbose', proxy.url('dba', 'dba', 'demo')]);
    victim.stdin.end('select pg_sleep(30);\nselect 1;\n');
    let stderr = '';
    victim.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((r) => victim.on('close', (code) => r(code)));
    try {
      let id: string | undefined;
      for (let i = 0; i < 100 && id === undefined; i++) {
        const rows = rowsOf((await consoleCommand('dba', 'SHOW CLIENTS')).stdout);
        id = rows.find((x) => x.database === 'demo' && x.state === 'active')?.id;
        if (id === undefined) await new Promise((res) => setTimeout(res, 100));
      }
      expect(id, stderr).toMatch(/^\d+$/);
      const killed = await consoleCommand('dba', `KILL ${id}`);
      expect(killed.code, killed.stderr).toBe(0);
      expect(killed.stdout.trim()).toBe('KILL');
      // As pg_terminate_backend with pgwarden's grace: the running statement is canceled, then the session ends.
      expect(await exited).toBe(2);
      // As pg_terminate_backend: the FATAL alone, no ERROR 57014 of pgwarden's cancel before it.
      expect(stderr).not.toContain('57014');
      expect(stderr).toContain('FATAL:  57P01: terminating connection due to administrator command');
      const after = rowsOf((await consoleCommand('dba', 'SHOW CLIENTS')).stdout);
      expect(after.find((x) => x.id === id)).toBeUndefined();
      // An id no session has.
      const none = await consoleCommand('dba', `KILL ${id}`);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain(`ERROR:  42704: no client with id ${id}`);
    } finally {
      victim.kill('SIGKILL');
    }
  }, 60_000);
});

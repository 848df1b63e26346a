// The pgwarden command: exit code 2 on a bad config, a listen port taken or a log file that cannot be opened, 1 on a database it cannot serve; superuser warning, SIGHUP reload, no TLS, SIGTERM, passwd, demo.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, test } from 'vitest';
import YAML from 'yaml';
import { waitForFileText } from '../helpers/audit-file.js';
import { cleanEnv, startDemo } from '../helpers/demo-process.js';
import { demoConfigObject, testEnv } from '../helpers/proxy.js';
import { BIN, duplicateJsonKeys, serveProcess } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** `pgwarden serve` on `cfg`, its file in this suite's folder. */
const serve = (cfg: Record<string, unknown>, file = path.join(dir, `pgwarden-${Date.now()}.yaml`)) =>
  serveProcess(cfg, file);

/** `pgwarden serve --config file` run to its exit (a start that fails): its status and stderr. */
const serveUntilExit = (file: string) =>
  spawnSync(process.execPath, [BIN, 'serve', '--config', file], {
    env: testEnv(),
    encoding: 'utf8',
    timeout: 60_000,
  });

describe('pgwarden serve', () => {
  test('a bad config exits 2 listing every error with its path', () => {
    const file = path.join(dir, 'bad.yaml');
    const cfg = demoConfigObject();
    (cfg.roles as Record<string, { permissions: { effect: string }[] }>).analyst!.permissions[2]!.effect =
      'maybe';
    cfg.listen = 'nowhere';
    fs.writeFileSync(file, YAML.stringify(cfg));
    let status = 0;
    let stderr = '';
    try {
      execFileSync(process.execPath, [BIN, 'serve', '--config', file], { env: testEnv(), stdio: 'pipe' });
    } catch (e) {
      status = (e as { status: number }).status;
      stderr = String((e as { stderr: Buffer }).stderr);
    }
    expect(status).toBe(2);
    expect(stderr).toContain('roles.analyst.permissions[2].effect: expected "allow" | "deny"');
    expect(stderr).toContain('listen: must be host:port');
  });

  test('warns when the upstream login is a superuser', async () => {
    const pgInfo = inject('pg');
    const cfg = demoConfigObject();
    cfg.databases = {
      demo: {
        url: `postgres://${pgInfo.superuser}:${pgInfo.superuserPassword}@127.0.0.1:${pgInfo.port}/demo`,
      },
    };
    const s = await serve(cfg);
    const line = s.lines.find((l) => l.event === 'upstream-login');
    expect(String(line?.msg)).toBe(
      `database demo: the upstream login "${pgInfo.superuser}" is a superuser; use a role without superuser rights`,
    );
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  test('SIGHUP reloads; an invalid file keeps the old config; SIGTERM exits 0', async () => {
    const file = path.join(dir, 'reload.yaml');
    const cfg = demoConfigObject();
    const s = await serve(cfg, file);
    const url = (pw: string) => `postgres://alice:${pw}@127.0.0.1:${s.port}/demo`;
    const ok = async (pw: string) => {
      const c = new pg.Client({ connectionString: url(pw) });
      try {
        await c.connect();
        await c.end();
        return true;
      } catch (e) {
        if (process.env.DEBUG_CLI) console.log(pw, e, s.lines.slice(-5));
        return false;
      }
    };
    expect(await ok('alice')).toBe(true);
    (cfg.users as Record<string, { password: string }>).alice = { password: 'alice2' };
    fs.writeFileSync(file, YAML.stringify(cfg));
    s.child.kill('SIGHUP');
    await s.waitFor((l) => l.event === 'reload');
    expect(await ok('alice2')).toBe(true);
    expect(await ok('alice')).toBe(false);
    fs.writeFileSync(file, 'databases: [');
    s.child.kill('SIGHUP');
    await s.waitFor((l) => l.event === 'reload-failed');
    expect(await ok('alice2')).toBe(true);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  // With log and audit files, pino's flush at exit once threw "sonic boom is not ready yet" (the
  // files were still being opened) after the hint.
  test.each([
    ['stderr', {}],
    [
      'log and audit files',
      { log: { file: 'busy-logs/pgwarden.log' }, audit: { file: 'busy-logs/audit.jsonl' } },
    ],
  ])(
    'a listen port already taken, logs on %s: the hint to choose another address, exit 2',
    async (_, logs) => {
      const taken = net.createServer();
      await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
      const port = (taken.address() as net.AddressInfo).port;
      try {
        const cfg: Record<string, unknown> = { ...demoConfigObject(), ...logs };
        cfg.listen = `127.0.0.1:${port}`;
        // roles: single: nothing is set up upstream before the listen fails.
        delete (cfg.databases as Record<string, Record<string, unknown>>).demo!.roles;
        const file = path.join(dir, 'busy.yaml');
        fs.writeFileSync(file, YAML.stringify(cfg));
        const r = serveUntilExit(file);
        expect(r.status).toBe(2);
        expect(r.stderr.trim().split('\n').at(-1)).toBe(
          `pgwarden serve: cannot listen on 127.0.0.1:${port}: the port is taken (another pgwarden, or npm start?). Choose another listen address in ${file}.`,
        );
      } finally {
        taken.close();
      }
    },
  );

  test('an audit file that cannot be opened: named on stderr, exit 2 (its lines are not lost silently)', () => {
    // Its folder would be a file: mkdir fails (EEXIST), as a folder without write permission would.
    const file = path.join(dir, 'unopenable.yaml');
    fs.writeFileSync(path.join(dir, 'not-a-folder'), '');
    fs.writeFileSync(
      file,
      YAML.stringify({ ...demoConfigObject(), audit: { file: 'not-a-folder/audit.jsonl' } }),
    );
    const r = serveUntilExit(file);
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(
      `pgwarden serve: cannot open audit.file ${path.join(dir, 'not-a-folder/audit.jsonl')}: EEXIST: file already exists, mkdir '${path.join(dir, 'not-a-folder')}'`,
    );
  });

  test('a managed database whose login lacks CREATEROLE: the message on stderr without a stack trace, exit 1', async () => {
    const pgInfo = inject('pg');
    const su = new pg.Client({
      connectionString: `postgres://${pgInfo.superuser}:${pgInfo.superuserPassword}@127.0.0.1:${pgInfo.port}/postgres`,
    });
    await su.connect();
    const login = `cli_nocreate_${process.pid}`;
    await su.query(`DROP ROLE IF EXISTS ${login}`);
    await su.query(`CREATE ROLE ${login} LOGIN PASSWORD 'nocreate'`);
    try {
      const cfg = demoConfigObject();
      cfg.databases = {
        demo: { url: `postgres://${login}:nocreate@127.0.0.1:${pgInfo.port}/demo`, roles: 'managed' },
      };
      const file = path.join(dir, 'nocreate.yaml');
      fs.writeFileSync(file, YAML.stringify(cfg));
      const r = serveUntilExit(file);
      expect(r.status).toBe(1);
      const last = r.stderr.trim().split('\n').at(-1);
      expect(last).toMatch(
        new RegExp(
          `^pgwarden serve: database demo: roles: managed needs an administration login with CREATEROLE, and "${login}" lacks CREATEROLE: `,
        ),
      );
      expect(r.stderr).not.toMatch(/^\s+at /m);
    } finally {
      await su.query(`DROP ROLE IF EXISTS ${login}`);
      await su.end();
    }
  });

  test('log lines are JSON objects without a repeated key (a failed login, a reload)', async () => {
    const s = await serve(demoConfigObject());
    const c = new pg.Client({ connectionString: `postgres://alice:wrong@127.0.0.1:${s.port}/demo` });
    await expect(c.connect()).rejects.toThrow('password authentication failed');
    await s.waitFor((l) => l.event === 'startup-failed');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    const failed = s.lines.find((l) => l.event === 'startup-failed');
    expect(failed).toMatchObject({ code: '28P01', msg: 'startup refused' });
    expect(s.raw.length).toBeGreaterThan(2);
    for (const line of s.raw) expect(duplicateJsonKeys(line), line).toEqual([]);
  });

  test('without TLS configured, a client requiring TLS is refused', async () => {
    const s = await serve(demoConfigObject());
    const c = new pg.Client({
      connectionString: `postgres://alice:alice@127.0.0.1:${s.port}/demo`,
      ssl: { rejectUnauthorized: false },
    });
    await expect(c.connect()).rejects.toThrow('The server does not support SSL connections');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });
});

describe('pgwarden --version', () => {
  test("prints package.json's version", () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(BIN, '../../package.json'), 'utf8')) as {
      version: string;
    };
    expect(execFileSync(process.execPath, [BIN, '--version'], { encoding: 'utf8' })).toBe(`${pkg.version}\n`);
  });
});

describe('pgwarden passwd', () => {
  test('prints a SCRAM verifier that the config accepts', () => {
    const out = execFileSync(process.execPath, [BIN, 'passwd'], { input: 'hunter2\n' }).toString().trim();
    expect(out).toMatch(/^SCRAM-SHA-256\$4096:[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+$/);
  });
});

describe('pgwarden demo (npm start)', () => {
  test('records its ports where the demo config reads them, logs pretty only, and Ctrl-C exits 0 removing the record', async () => {
    const demo = await startDemo(dir);
    const { port, record } = demo;
    const out = demo.out();
    expect(out).toContain(`psql "postgres://alice:alice@127.0.0.1:${port}/demo"`);
    // The demo's instance config names the policy store in the demo database (seeded from the YAML).
    const demoConfig = path.join(dir, 'demo.pgwarden.yaml');
    expect(out).toContain(`PGWARDEN_API_KEY=agent-demo-token node ${BIN} mcp --config ${demoConfig}`);
    expect(fs.readFileSync(demoConfig, 'utf8')).toContain(`env_file: ${record}`);
    expect(out).not.toContain('npx');

    const recorded = Object.fromEntries(
      fs
        .readFileSync(record, 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
        .map((l) => l.split('=') as [string, string]),
    );
    expect(recorded.PGWARDEN_LISTEN).toBe(`127.0.0.1:${port}`);
    const pgPort = Number(recorded.PGWARDEN_UPSTREAM_PORT);
    expect(out).toContain(`Its PostgreSQL listens on 127.0.0.1:${pgPort}`);

    // check with the demo config reads the demo's own PostgreSQL, and its policy from the store.
    const check = (sql: string) =>
      spawnSync(process.execPath, [BIN, 'check', '--config', demoConfig, '--user', 'alice', sql], {
        env: cleanEnv(),
        encoding: 'utf8',
        timeout: 60_000,
      });
    const checked = check('select id, email from users');
    expect(checked.stderr).toBe('');
    expect(checked.stdout).toContain(`catalog read from 127.0.0.1:${pgPort}/demo`);

    const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${port}/demo` });
    await c.connect();
    const r = await c.query<{ n: number }>('select count(*)::int as n from users');
    await expect(c.query("select id from users where email like 'a%'")).rejects.toThrow('is hidden from you');
    await c.end();
    expect(r.rows[0]?.n).toBeGreaterThanOrEqual(12);
    // The demo's audit file (the console's audit page reads it) gets alice's statements, in JSON.
    const demoAudit = path.join(dir, 'demo-audit.jsonl');
    expect(out).toContain(`written to ${demoAudit}`);
    const auditText = await waitForFileText(demoAudit, 'select count(*)::int as n from users');
    expect(JSON.parse(auditText.split('\n')[0] ?? '')).toMatchObject({ audit: true });
    // The web console is served, and the demo's dba logs in.
    const consoleUrl = /Web console: (http:\/\/\S+\/console\/) \(log in as dba \/ dba/.exec(out)?.[1];
    expect(consoleUrl).toBeDefined();
    expect((await fetch(consoleUrl!)).status).toBe(200);
    const dba = await fetch(new URL('/api/login', consoleUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'dba', password: 'dba' }),
    });
    expect(dba.status).toBe(200);

    // As the console does: dba reads the analyst role and PUTs it back with a deny SEE on
    // orgs.name (If-Match: the version read); alice's next session gets orgs.name masked.
    const cookie = dba.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const { csrf_token: csrf } = (await dba.json()) as { csrf_token: string };
    const got = await fetch(new URL('/api/roles/analyst', consoleUrl), { headers: { cookie } });
    expect(got.status).toBe(200);
    const etag = got.headers.get('etag');
    expect(etag).toMatch(/^"\d+"$/);
    const { role } = (await got.json()) as { role: { permissions: Record<string, unknown>[] } };
    const before = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${port}/demo` });
    await before.connect();
    const shown = await before.query<{ name: string }>('select name from orgs');
    expect(shown.rows.some((r) => r.name !== '*****')).toBe(true);
    const checkBefore = check('select name from orgs');
    await before.end();
    const deny = {
      effect: 'deny',
      actions: ['SEE'],
      database: 'demo',
      schema: 'public',
      table: 'orgs',
      column: 'name',
    };
    const put = await fetch(new URL('/api/roles/analyst', consoleUrl), {
      method: 'PUT',
      headers: { cookie, 'x-csrf-token': csrf, 'content-type': 'application/json', 'if-match': etag! },
      body: JSON.stringify({ ...role, permissions: [...role.permissions, deny] }),
    });
    expect(put.status).toBe(200);
    // NOTIFY reaches the proxy within a second or so under load.
    let masked = false;
    for (let i = 0; i < 100 && !masked; i++) {
      const after = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${port}/demo` });
      await after.connect();
      const names = await after.query<{ name: string }>('select name from orgs');
      masked = names.rows.length > 0 && names.rows.every((r) => r.name === '*****');
      await after.end();
      if (!masked) await new Promise((r) => setTimeout(r, 200));
    }
    expect(masked).toBe(true);
    // check reads the same store: its verdict for alice changed with the edit.
    const checkAfter = check('select name from orgs');
    expect(checkAfter.stderr).toBe('');
    expect(checkAfter.stdout).not.toBe(checkBefore.stdout);
    expect(checkAfter.stdout).toContain('orgs.name');

    expect(await demo.stop()).toBe(0);
    expect(fs.existsSync(record)).toBe(false);
    const err = demo.err();

    // One format: every log line pretty, the audit lines of both statements too.
    const lines = err.split('\n').filter((l) => l.trim() !== '');
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
    expect(err).toContain('embedded PostgreSQL 15 ready');
    expect(err.match(/INFO.*: statement/g)?.length).toBeGreaterThanOrEqual(2);
    // Starting PostgreSQL and three child processes takes minutes on a loaded machine.
  }, 240_000);
});

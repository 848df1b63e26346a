// Logs for log pipelines (issue 21): every line a real `pgwarden serve` run writes is one JSON object without a repeated key; log.file and audit.file are reopened on SIGHUP after a rename (logrotate) and rotated by size.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { demoConfigObject, testEnv } from '../helpers/proxy.js';
import { BIN, duplicateJsonKeys, serveProcess, stopChild } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-logs-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Every line of `text` parsed, asserting each is one JSON object without a repeated key. */
function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      expect(duplicateJsonKeys(l), l).toEqual([]);
      const o = JSON.parse(l) as unknown;
      expect(typeof o === 'object' && o !== null && !Array.isArray(o), l).toBe(true);
      return o as Record<string, unknown>;
    });
}

const read = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '');

async function until(what: string, cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A session that touches every kind of line: logins (one refused), statements allowed, masked, refused, failing upstream, the wire console. */
async function session(port: number): Promise<void> {
  await expect(
    new pg.Client({ connectionString: `postgres://alice:wrong@127.0.0.1:${port}/demo` }).connect(),
  ).rejects.toMatchObject({ code: '28P01' });
  const alice = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${port}/demo` });
  await alice.connect();
  try {
    await alice.query('select id, name from users order by id');
    await alice.query('select * from users');
    await expect(alice.query("select id from users where email like 'a%'")).rejects.toMatchObject({
      code: '42501',
    });
    await expect(alice.query('selec 1')).rejects.toMatchObject({ code: '42601' });
    await expect(alice.query('select 1 / 0')).rejects.toMatchObject({ code: '22012' });
    await alice.query('select $1::int as n', [7]);
  } finally {
    await alice.end();
  }
  const dba = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${port}/pgwarden` });
  await dba.connect();
  try {
    await dba.query('SHOW CLIENTS');
    await expect(dba.query('SHOW NOTHING')).rejects.toMatchObject({ code: '0A000' });
  } finally {
    await dba.end();
  }
}

describe('JSON lines on stderr', () => {
  test('start, logins, statements, refusals, errors, the console, a reload and the shutdown: every line one object without a repeated key', async () => {
    const s = await serveProcess(demoConfigObject(), path.join(dir, 'stderr.yaml'));
    try {
      await session(s.port);
      s.child.kill('SIGHUP');
      await s.waitFor((l) => l.event === 'reload');
    } finally {
      s.child.kill('SIGTERM');
    }
    expect(await s.exited).toBe(0);
    const lines = jsonLines(s.raw.join('\n'));
    const events = new Set(lines.map((l) => l.event));
    for (const e of ['listening', 'startup-failed', 'reload', 'shutdown', 'stopped'])
      expect(events).toContain(e);
    // Audit lines (`audit: true`; the process log, whose lines may name a statement too, shares stderr here): allowed, masked, refused.
    const decisions = new Set(lines.filter((l) => l.audit === true).map((l) => l.decision));
    expect([...decisions].sort()).toEqual(['allowed', 'masked', 'refused']);
  }, 120_000);
});

/** Spawns `pgwarden serve` with `cfg` (log.file set), and resolves once the log file says it listens. */
async function serveLoggingToFile(cfg: Record<string, unknown>, logFile: string) {
  // Port 0: the kernel picks it as the proxy binds (a port chosen beforehand could be taken meanwhile).
  cfg.listen = '127.0.0.1:0';
  const file = path.join(dir, 'files.yaml');
  fs.writeFileSync(file, YAML.stringify(cfg));
  const child = spawn(process.execPath, [BIN, 'serve', '--config', file], {
    env: testEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  try {
    await until(
      'listening',
      () => read(logFile).includes('"event":"listening"') || child.exitCode !== null,
      60_000,
    );
    if (child.exitCode !== null) throw new Error(`pgwarden serve exited: ${stderr}`);
  } catch (e) {
    await stopChild(child, exited);
    throw e;
  }
  const listening = read(logFile)
    .split('\n')
    .find((l) => l.includes('"event":"listening"')) as string;
  const port = (JSON.parse(listening) as { port: number }).port;
  return { child, exited, port, stderr: () => stderr };
}

describe('log files', () => {
  test('log.file: renamed, then SIGHUP: new lines go to a new file at the path; audit.file rotates by size, keeping `keep` files', async () => {
    const log = path.join(dir, 'logs', 'pgwarden.log');
    const audit = path.join(dir, 'logs', 'audit.jsonl');
    const cfg = demoConfigObject();
    cfg.log = { file: 'logs/pgwarden.log' };
    cfg.audit = { file: 'logs/audit.jsonl', max_size_bytes: 4096, keep: 2 };
    const s = await serveLoggingToFile(cfg, log);
    try {
      await session(s.port);
      // logrotate: rename, then SIGHUP.
      fs.renameSync(log, `${log}.1`);
      s.child.kill('SIGHUP');
      await until('the reload line in the new file', () => read(log).includes('"event":"reload"'));
      expect(read(`${log}.1`)).not.toContain('"event":"reload"');
      expect(read(`${log}.1`)).toContain('"event":"listening"');

      // Audit lines are written in batches of 64 KiB or every 500 ms: enough statements to rotate a few times.
      const c = new pg.Client({ connectionString: `postgres://dba:dba@127.0.0.1:${s.port}/demo` });
      await c.connect();
      try {
        for (let i = 0; i < 300; i++) await c.query(`select id, name from users where id = ${i}`);
      } finally {
        await c.end();
      }
      await until('two rotated audit files', () => fs.existsSync(`${audit}.2`));
    } finally {
      s.child.kill('SIGTERM');
    }
    expect(await s.exited).toBe(0);
    expect(s.stderr()).toBe('');
    // Exactly `keep` rotated files, each past the bound (a batch is written whole), none beyond.
    expect(fs.existsSync(`${audit}.3`)).toBe(false);
    for (const f of [`${audit}.1`, `${audit}.2`]) expect(fs.statSync(f).size).toBeGreaterThanOrEqual(4096);
    const auditLines = [audit, `${audit}.1`, `${audit}.2`].flatMap((f) => jsonLines(read(f)));
    // The kept files hold dba's statements; the oldest kept batch may also hold the first
    // session's lines (a batch is written whole, and 64 KiB spans both).
    const dba = auditLines.filter((l) => l.identity === 'dba');
    expect(dba.length).toBeGreaterThan(20);
    for (const l of dba) expect(l).toMatchObject({ decision: 'allowed' });
    for (const l of auditLines) expect(['dba', 'alice']).toContain(l.identity);
    const logLines = [...jsonLines(read(`${log}.1`)), ...jsonLines(read(log))];
    const events = new Set(logLines.map((l) => l.event));
    for (const e of ['listening', 'startup-failed', 'reload', 'shutdown', 'stopped'])
      expect(events).toContain(e);
    // The shutdown went to the file at the path, after the SIGHUP.
    expect(read(log)).toContain('"event":"stopped"');
  }, 180_000);
});

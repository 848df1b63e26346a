// pgwarden replay: a recorded audit log decided again under a stricter policy lists exactly the statements that change.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { runReplay } from '../../src/policy/replay-command.js';
import { CatalogSource } from '../../src/proxy/catalog-source.js';
import { demoConfigObject, startTestProxy, testEnv } from '../helpers/proxy.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-replay-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

type Roles = Record<string, { permissions: Record<string, unknown>[] }>;

describe('pgwarden replay', () => {
  test('a stricter policy: the exact statements that change, per user, with counts', async () => {
    const lines: Record<string, unknown>[] = [];
    const proxy = await startTestProxy(demoConfigObject(), { logLines: lines });
    try {
      const alice = await proxy.client('alice');
      await alice.query('SELECT id, name FROM orgs WHERE id > 1');
      await alice.query('SELECT id, name FROM orgs WHERE id > 2');
      await alice.query('SELECT id FROM users');
      await alice.query("SELECT id FROM users WHERE email = 'x'").catch(() => {});
      await alice.end();
      const bob = await proxy.client('bob');
      await bob.query('SELECT count(*) FROM orgs');
      await bob.end();
    } finally {
      await proxy.close();
    }
    const audit = path.join(dir, 'audit.jsonl');
    fs.writeFileSync(audit, lines.map((l) => JSON.stringify(l)).join('\n'));
    expect(lines.filter((l) => l.audit === true).map((l) => l.sql)).toEqual([
      'SELECT id, name FROM orgs WHERE id > $1',
      'SELECT id, name FROM orgs WHERE id > $1',
      'SELECT id FROM users',
      'SELECT id FROM users WHERE email = $1',
      'SELECT count(*) FROM orgs',
    ]);

    // Stricter: analysts lose SEE on orgs.name; support loses SELECT on orgs.
    const proposed = demoConfigObject();
    const roles = proposed.roles as Roles;
    roles.analyst!.permissions.push({
      effect: 'deny',
      actions: ['SEE'],
      database: 'demo',
      schema: 'public',
      table: 'orgs',
      column: 'name',
    });
    roles.support!.permissions.push({
      effect: 'deny',
      actions: ['SELECT'],
      database: 'demo',
      schema: 'public',
      table: 'orgs',
    });
    const file = path.join(dir, 'proposed.yaml');
    fs.writeFileSync(file, YAML.stringify(proposed));
    const catalogs = new CatalogSource(60_000);
    // The demo config's ${PGWARDEN_UPSTREAM_PORT} names the test PostgreSQL.
    Object.assign(process.env, testEnv());
    const out = await runReplay(
      { config: file, audit, json: true },
      { loadCatalog: (database, url) => catalogs.get(database, url) },
    );
    expect(out.exitCode).toBe(1);
    const report = JSON.parse(out.stdout) as {
      lines: number;
      statements: number;
      counts: Record<string, number>;
      changes: {
        identity: string;
        sql: string;
        occurrences: number;
        change: string;
        before: unknown;
        after: { decision: string; masked?: string[] };
      }[];
    };
    expect(report).toMatchObject({ lines: 5, statements: 4 });
    expect(report.changes.map((c) => [c.identity, c.sql, c.occurrences, c.change])).toEqual([
      ['alice', 'SELECT id, name FROM orgs WHERE id > $1', 2, 'masks-added'],
      ['bob', 'SELECT count(*) FROM orgs', 1, 'allowed→refused'],
    ]);
    expect(report.changes[0]!.after).toEqual({ decision: 'masked', masked: ['name'] });
    await catalogs.close();

    // The command itself prints the same report and exits (its catalog connection closed).
    const bin = path.resolve(import.meta.dirname, '../../bin/pgwarden.js');
    const cli = spawnSync(process.execPath, [bin, 'replay', '--config', file, '--audit', audit, '--json'], {
      env: testEnv(),
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(cli.error).toBeUndefined();
    expect(cli.status).toBe(1);
    expect((JSON.parse(cli.stdout) as typeof report).counts).toEqual(report.counts);
    expect(report.counts).toEqual({
      'allowed→refused': 1,
      'refused→allowed': 0,
      'masks-added': 2,
      'masks-removed': 0,
      'masks-changed': 0,
    });
  });
});

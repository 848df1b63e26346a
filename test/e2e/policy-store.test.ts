// The policy store: migrations, import/export round trip, append-only history, strict validation, and NOTIFY reload across two serve processes.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { policyExport, policyImport } from '../../src/policy/policy-command.js';
import { PolicyInvalidError, policyEpoch } from '../../src/policy/policy-document.js';
import { POLICY_MIGRATIONS } from '../../src/policy/policy-migrations.js';
import type { Policy } from '../../src/policy/policy-schema.js';
import { PolicyStore, PolicyStoreUnavailableError } from '../../src/policy/policy-store.js';
import { applyMigrations } from '../../src/policy/schema-migrations.js';
import {
  createStoreDatabase,
  DEMO_CONFIG_FILE,
  storeInstanceConfig,
  writeConfig,
} from '../helpers/policy-store-db.js';
import { testEnv } from '../helpers/proxy.js';
import { BIN, type Served, serveProcess } from '../helpers/serve-process.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-store-'));
let db: Awaited<ReturnType<typeof createStoreDatabase>>;
let configFile: string;

beforeAll(async () => {
  // The demo config's ${PGWARDEN_UPSTREAM_PORT} (read in-process by policy import) names the test PostgreSQL.
  Object.assign(process.env, testEnv());
  db = await createStoreDatabase();
  configFile = writeConfig(dir, 'instance.yaml', storeInstanceConfig(db.url));
});
afterAll(async () => {
  await db.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The analyst role without its deny SEE on users.email. */
function unhideEmail(p: Policy): Policy {
  const analyst = p.roles.analyst!;
  return {
    ...p,
    roles: {
      ...p.roles,
      analyst: { ...analyst, permissions: analyst.permissions.filter((r) => r.column !== 'email') },
    },
  };
}

describe('policy store', () => {
  test('migrations run once; import of the demo policy, then export, then import again changes nothing', async () => {
    const imported = await policyImport({ config: configFile, file: DEMO_CONFIG_FILE });
    expect(imported.stderr).toContain(
      "left out (they stay in each instance's own config): listen, mode, demo, env_file, databases, keys_file",
    );
    expect(imported.stderr).toContain('users.alice: plain password stored as a SCRAM verifier');
    expect(imported.stdout).toMatch(/^imported as version 1 \(epoch [0-9a-f]{16}; 8 changes\)\n$/);

    const first = await policyExport({ config: configFile });
    expect(first.exitCode).toBe(0);
    const exported = YAML.parse(first.stdout) as Record<string, unknown>;
    const demo = YAML.parse(fs.readFileSync(DEMO_CONFIG_FILE, 'utf8')) as Record<string, unknown>;
    expect(exported.roles).toEqual(demo.roles);
    expect(exported.workspace_admins).toEqual(['dba']);
    expect(Object.keys(exported.users as object)).toEqual(['alice', 'bob', 'dba']);
    expect((exported.users as Record<string, { scram: string }>).alice!.scram).toMatch(
      /^SCRAM-SHA-256\$4096:/,
    );
    expect(exported.api_keys).toEqual(demo.api_keys);

    const file = path.join(dir, 'exported.yaml');
    fs.writeFileSync(file, first.stdout);
    const again = await policyImport({ config: configFile, file });
    expect(again.stdout).toMatch(/^unchanged: the store already holds this policy \(version 1, /);
    const second = await policyExport({ config: configFile });
    expect(second.stdout).toBe(first.stdout);

    const store = await PolicyStore.open(db.url);
    try {
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      expect(await applyMigrations(c, POLICY_MIGRATIONS)).toEqual([]);
      const perms = await c.query(
        "SELECT effect, actions, column_name FROM pgwarden.policy_permissions WHERE role_name = 'analyst' ORDER BY ord",
      );
      expect(perms.rows.map((r) => `${r.effect} ${r.actions.join(',')} ${r.column_name ?? ''}`)).toEqual([
        'allow SELECT,SEE ',
        'deny SEE email',
        'deny SEE ssn',
        'deny SEE secret',
      ]);
      // The history is append-only.
      await expect(
        c.query('UPDATE pgwarden.policy_versions SET author = $1', ['mallory']),
      ).rejects.toMatchObject({
        code: '42501',
        message: 'pgwarden.policy_versions is append-only',
      });
      await expect(c.query('DELETE FROM pgwarden.policy_versions')).rejects.toMatchObject({ code: '42501' });
      await c.end();
      const history = await store.history();
      expect(history.map((h) => [h.version, h.author.startsWith('cli:'), h.changes.length])).toEqual([
        [1, true, 8],
      ]);
      expect(history[0]!.changes.slice(0, 3)).toEqual([
        { op: 'added', path: 'users.alice' },
        { op: 'added', path: 'users.bob' },
        { op: 'added', path: 'users.dba' },
      ]);
    } finally {
      await store.close();
    }
  });

  test('an invalid policy is refused with every path, and the store is unchanged', async () => {
    const store = await PolicyStore.open(db.url);
    try {
      const before = await store.current();
      const err = await store
        .commit({ author: 'test' }, ({ current }) => {
          const p = structuredClone(current.policy) as Record<string, unknown> & Policy;
          p.roles.analyst!.permissions.push({
            effect: 'allow',
            actions: ['MANAGE'],
            database: 'demo',
            schema: 'public',
          });
          p.roles.analyst!.tenants.push('g/nobody');
          p.groups.ops = { members: ['ghost'] };
          return p;
        })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PolicyInvalidError);
      expect((err as PolicyInvalidError).issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
        'roles.analyst.permissions[4].actions: MANAGE is granted on a database; a MANAGE rule scoped to a schema, table or column never matches',
        'groups.ops.members[0]: names no user "ghost"',
        'roles.analyst.tenants[1]: names no group "nobody"',
      ]);
      const after = await store.current();
      expect(after.version).toBe(before.version);
      expect(after.epoch).toBe(before.epoch);
    } finally {
      await store.close();
    }
  });

  test('an unreachable store is a clear error', async () => {
    const err = await PolicyStore.open('postgres://nobody:secret@127.0.0.1:1/x', {
      connectTimeoutMs: 2000,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PolicyStoreUnavailableError);
    expect((err as Error).message).toMatch(
      /^policy store postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:1\/x is unavailable: /,
    );
  });

  test('the store unreachable at start: serve refuses with a clear message, unless policy_cache holds the last good policy', async () => {
    const cache = path.join(dir, 'policy-cache.json');
    const first = await serveProcess(
      storeInstanceConfig(db.url, { policy_cache: cache }),
      path.join(dir, 'cache-1.yaml'),
    );
    first.child.kill('SIGTERM');
    await first.exited;
    expect(fs.statSync(cache).mode & 0o777).toBe(0o600);
    const down = 'postgres://nobody:secret@127.0.0.1:1/store';
    const refused = spawnSync(
      process.execPath,
      [BIN, 'serve', '--config', writeConfig(dir, 'down.yaml', storeInstanceConfig(down))],
      {
        env: testEnv(),
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      'pgwarden serve: policy store postgres://nobody:***@127.0.0.1:1/store is unavailable:',
    );
    expect(refused.stderr).toContain('configure policy_cache');
    expect(refused.stderr).not.toContain('secret');
    const cached = await serveProcess(
      // Started from the cache, the policy is unconfirmed: it serves for max_policy_lag_ms (issue 21).
      storeInstanceConfig(down, { policy_cache: cache, fleet: { max_policy_lag_ms: 120_000 } }),
      path.join(dir, 'cache-2.yaml'),
    );
    try {
      await cached.waitFor((l) => l.event === 'policy-store-unavailable');
      const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${cached.port}/demo` });
      await c.connect();
      expect((await c.query('SELECT email FROM users ORDER BY id LIMIT 1')).rows[0].email).toBe('*****');
      await c.end();
    } finally {
      cached.child.kill('SIGTERM');
      await cached.exited;
    }
  });

  test('two serve processes pick up a committed change within a second, open sessions included', async () => {
    const served: Served[] = [];
    const clients: pg.Client[] = [];
    const store = await PolicyStore.open(db.url);
    try {
      for (const i of [1, 2])
        served.push(await serveProcess(storeInstanceConfig(db.url), path.join(dir, `serve-${i}.yaml`)));
      for (const s of served) {
        const c = new pg.Client({ connectionString: `postgres://alice:alice@127.0.0.1:${s.port}/demo` });
        await c.connect();
        clients.push(c);
        const r = await c.query('SELECT email FROM users ORDER BY id LIMIT 1');
        expect(r.rows[0].email).toBe('*****');
      }
      const cur = await store.current();
      const started = Date.now();
      const r = await store.commit({ author: 'test' }, ({ current }) => unhideEmail(current.policy));
      const committed = Date.now();
      expect(r.committed).toBe(true);
      expect(r.changes).toEqual([{ op: 'changed', path: 'roles.analyst' }]);
      expect(r.after.epoch).toBe(policyEpoch(unhideEmail(cur.policy)));
      // Every open session sees the new mask …
      for (const c of clients) {
        for (;;) {
          const row = (await c.query('SELECT email FROM users ORDER BY id LIMIT 1')).rows[0];
          if (row.email !== '*****') break;
          if (Date.now() - started > 20_000) throw new Error('no reload within 20 s');
          await new Promise((res) => setTimeout(res, 20));
        }
      }
      // … and each instance applied it soon after the commit (its own log's clock): NOTIFY or, missed,
      // the next heartbeat's check (1 s) brings it; seconds of slack for a loaded machine, the
      // latency is logged (bench/ measures it).
      for (const s of served) {
        const line = await s.waitFor((l) => l.event === 'policy-reload');
        expect(line).toMatchObject({ version: r.after.version, epoch: r.after.epoch });
        console.log(`instance reloaded ${(line.time as number) - committed} ms after the commit`);
        expect((line.time as number) - committed).toBeLessThan(10_000);
      }
    } finally {
      for (const c of clients) await c.end().catch(() => {});
      for (const s of served) s.child.kill('SIGTERM');
      await Promise.all(served.map((s) => s.exited));
      await store.close();
    }
  });
});

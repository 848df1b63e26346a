// Config loading: every error with its path, ${ENV} substitution, the demo config, load-time rules.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import YAML from 'yaml';
import { DEMO_DIR } from '../../../src/embedded/demo.js';
import { ConfigError, parseConfig, UNRESOLVED_UPSTREAM_URL } from '../../../src/policy/config-load.js';

const base = {
  databases: { demo: { url: 'postgres://app:${APP_PW}@127.0.0.1:5432/demo' } },
  users: { alice: { scram: 'SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy' } },
  roles: {
    analyst: {
      tenants: ['u/alice'],
      permissions: [{ effect: 'allow', actions: ['SELECT', 'SEE'], database: 'demo' }],
    },
  },
};
const env = { APP_PW: 's3cret' };

function problems(obj: unknown, e: NodeJS.ProcessEnv = env): readonly string[] {
  try {
    parseConfig(YAML.stringify(obj), 'test.yaml', e);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('config', () => {
  test('the demo config loads with its three roles', () => {
    const text = fs.readFileSync(path.join(DEMO_DIR, 'pgwarden.yaml'), 'utf8');
    const { config, warnings } = parseConfig(text, 'pgwarden.yaml', {
      PGWARDEN_UPSTREAM_PASSWORD: 'p',
      PGWARDEN_UPSTREAM_PORT: '5433',
    });
    expect(Object.keys(config.roles)).toEqual(['analyst', 'support', 'dba']);
    expect(config.roles.analyst?.tenants).toEqual(['u/alice']);
    expect(config.databases.demo?.url).toBe('postgres://pgwarden_app:p@127.0.0.1:5433/demo');
    expect(config.mode).toBe('proxified');
    // The demo names a keys file that `pgwarden keys create` makes on first use.
    expect(warnings).toEqual([expect.stringMatching(/^keys file .*pgwarden\.keys\.yaml does not exist yet/)]);
  });

  test('env_file fills ${NAME} the environment lacks; the environment wins; a missing file is named', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-envfile-'));
    try {
      const file = path.join(dir, 'pgwarden.yaml');
      const cfg = { ...base, env_file: 'run/demo.env', listen: '${LISTEN}' };
      const text = YAML.stringify(cfg);
      expect(() => parseConfig(text, file, env)).toThrow(
        `listen: environment variable LISTEN is not set, and env_file ${path.join(dir, 'run/demo.env')} does not exist`,
      );
      fs.mkdirSync(path.join(dir, 'run'));
      fs.writeFileSync(
        path.join(dir, 'run/demo.env'),
        '# made by a test\nLISTEN=127.0.0.1:7001\nAPP_PW=from-file\n',
      );
      const loaded = parseConfig(text, file, env).config;
      expect(loaded.listen).toBe('127.0.0.1:7001');
      expect(loaded.databases.demo?.url).toBe('postgres://app:s3cret@127.0.0.1:5432/demo');
      expect(parseConfig(text, file, { ...env, LISTEN: '127.0.0.1:7002' }).config.listen).toBe(
        '127.0.0.1:7002',
      );
      fs.writeFileSync(path.join(dir, 'run/demo.env'), 'LISTEN 127.0.0.1:7001\n');
      expect(() => parseConfig(text, file, env)).toThrow(
        `env_file ${path.join(dir, 'run/demo.env')}:1: expected NAME=value`,
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a command that never connects loads without the upstream variables, its url unreachable', () => {
    const cfg = { ...base, listen: '${LISTEN:-127.0.0.1:6432}' };
    expect(problems(cfg, {})).toEqual(['databases.demo.url: environment variable APP_PW is not set']);
    const { config } = parseConfig(YAML.stringify(cfg), 'x.yaml', {}, { needsUpstream: false });
    expect(config.databases.demo?.url).toBe(UNRESOLVED_UPSTREAM_URL);
    // Only the upstream URLs are spared: any other missing variable is still a problem.
    expect(() =>
      parseConfig(YAML.stringify({ ...cfg, listen: '${LISTEN}' }), 'x.yaml', {}, { needsUpstream: false }),
    ).toThrow('listen: environment variable LISTEN is not set');
  });

  test('${ENV} is substituted in values only, after parsing', () => {
    const { config } = parseConfig(YAML.stringify(base), 'x.yaml', { APP_PW: 'a: b\n- c' });
    expect(config.databases.demo?.url).toBe('postgres://app:a: b\n- c@127.0.0.1:5432/demo');
  });

  test('${NAME:-default} falls back when NAME is unset or empty', () => {
    const withDefault = { ...base, listen: '${LISTEN:-127.0.0.1:7000}' };
    expect(parseConfig(YAML.stringify(withDefault), 'x.yaml', env).config.listen).toBe('127.0.0.1:7000');
    expect(parseConfig(YAML.stringify(withDefault), 'x.yaml', { ...env, LISTEN: '' }).config.listen).toBe(
      '127.0.0.1:7000',
    );
    expect(
      parseConfig(YAML.stringify(withDefault), 'x.yaml', { ...env, LISTEN: '127.0.0.1:1' }).config.listen,
    ).toBe('127.0.0.1:1');
  });

  test('a missing environment variable is an error with its path', () => {
    expect(problems(base, {})).toEqual(['databases.demo.url: environment variable APP_PW is not set']);
  });

  test('a bad effect names its path and the expected values', () => {
    const bad = structuredClone(base);
    (bad.roles.analyst.permissions as unknown[]).push({
      effect: 'allow',
      actions: ['SELECT'],
      database: 'demo',
    });
    (bad.roles.analyst.permissions as unknown[]).push({
      effect: 'permit',
      actions: ['SELECT'],
      database: 'demo',
    });
    expect(problems(bad)).toEqual(['roles.analyst.permissions[2].effect: expected "allow" | "deny"']);
  });

  test('every error is reported, not just the first', () => {
    const bad = {
      ...base,
      listen: 'nowhere',
      roles: {
        pg_admin: { permissions: [] },
        ok: { permissions: [{ effect: 'allow', actions: ['FLY'], database: 'x' }] },
      },
    };
    const p = problems(bad);
    expect(p).toContain('listen: must be host:port');
    expect(p).toContain(
      'roles.pg_admin: is reserved (postgres, public and names starting with pg_ or pgwarden_)',
    );
    expect(p.some((x) => x.startsWith('roles.ok.permissions[0].actions[0]: expected "SELECT"'))).toBe(true);
  });

  test('a MANAGE rule scoped below a database is rejected at load', () => {
    const bad = structuredClone(base);
    bad.roles.analyst.permissions = [
      { effect: 'allow', actions: ['MANAGE'], database: 'demo', schema: 'public' } as never,
    ];
    expect(problems(bad)).toEqual([
      'roles.analyst.permissions[0].actions: MANAGE is granted on a database; a MANAGE rule scoped to a schema, table or column never matches',
    ]);
  });

  test('plain passwords only in a demo config', () => {
    const bad = { ...base, users: { bob: { password: 'bob' } } };
    expect(problems(bad)).toEqual([
      'users.bob.password: plain passwords are allowed only in a demo config; use scram from `pgwarden passwd`',
    ]);
    expect(problems({ ...bad, demo: true })).toEqual([]);
  });

  test('local mode only on a loopback listener', () => {
    expect(problems({ ...base, mode: 'local', listen: '0.0.0.0:6432' })).toEqual([
      'mode: local is allowed only when listen is on loopback',
    ]);
    expect(problems({ ...base, mode: 'local', listen: '127.0.0.1:6432' })).toEqual([]);
  });

  test('unknown keys are errors, not ignored', () => {
    expect(problems({ ...base, listne: '127.0.0.1:1' })).toEqual(['(top level): unknown key listne']);
  });

  test('role names: length, characters, reserved', () => {
    const name = (n: string) => problems({ ...base, roles: { [n]: {} } });
    expect(name('a'.repeat(63))).toEqual([]);
    expect(name('a'.repeat(64))[0]).toMatch(/must be 1-63/);
    expect(name('has space')[0]).toMatch(/must be 1-63/);
    expect(name('public')[0]).toMatch(/reserved/);
    expect(name('postgres')[0]).toMatch(/reserved/);
  });

  test('a role with SELECT but SEE nowhere gets a warning', () => {
    const cfg = structuredClone(base);
    cfg.roles.analyst.permissions = [{ effect: 'allow', actions: ['SELECT'], database: 'demo' }];
    const { warnings } = parseConfig(YAML.stringify(cfg), 'x.yaml', env);
    expect(warnings).toEqual([
      'role analyst has SELECT but SEE nowhere: every value it reads will be masked',
    ]);
  });

  test('YAML syntax errors are reported', () => {
    expect(() => parseConfig('databases: [', 'broken.yaml', env)).toThrow(ConfigError);
  });
});

describe('policy load-time rules (issue 4)', () => {
  test('pgwarden has no built-in admin role: default_role admin needs roles.admin', () => {
    expect(problems({ ...base, default_role: 'admin' })).toEqual([
      'default_role: names no role "admin": pgwarden has no built-in admin role; define roles.admin or choose another default',
    ]);
    const withAdmin = { ...base, default_role: 'admin', roles: { ...base.roles, admin: { tenants: ['*'] } } };
    expect(problems(withAdmin)).toEqual([]);
    expect(problems({ ...base, default_role: 'nope' })).toEqual(['default_role: names no role "nope"']);
  });

  test('a role named admin with tenants that is not the default gets a warning (never added from tenants)', () => {
    const cfg = { ...base, roles: { ...base.roles, admin: { tenants: ['*'] } } };
    expect(parseConfig(YAML.stringify(cfg), 'x.yaml', env).warnings).toEqual([
      'role admin is never added from its tenants: a role named "admin" is held only by a connection that names it (-c pgwarden.role=admin), or, when it is default_role, by its tenants and the workspace admins (and then alone)',
    ]);
  });

  test('MANAGE scoped to a table or a column is rejected too; MANAGE on a database or * loads', () => {
    const withRule = (rule: Record<string, unknown>) => {
      const bad = structuredClone(base);
      bad.roles.analyst.permissions = [rule as never];
      return problems(bad);
    };
    const msg =
      'roles.analyst.permissions[0].actions: MANAGE is granted on a database; a MANAGE rule scoped to a schema, table or column never matches';
    expect(
      withRule({
        effect: 'deny',
        actions: ['SELECT', 'MANAGE'],
        database: 'demo',
        schema: 'public',
        table: 't',
      }),
    ).toEqual([msg]);
    expect(
      withRule({ effect: 'allow', actions: ['MANAGE'], database: '*', schema: '*', table: '*', column: 'c' }),
    ).toEqual([msg]);
    expect(withRule({ effect: 'allow', actions: ['MANAGE'], database: '*' })).toEqual([]);
  });
});

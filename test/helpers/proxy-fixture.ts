// One pgwarden per suite (or describe block): its own tables and deny rules, its clients, raw logins and the owner's connection.
import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { DEMO_APP_PASSWORD } from '../../src/embedded/demo.js';
import type { WallSwitches } from '../../src/policy/wall-switches.js';
import { ddl } from './ddl.js';
import { demoConfigObject, startTestProxy, type TestProxy } from './proxy.js';
import { RawClient } from './raw-client.js';

/**
 * A direct connection to the test PostgreSQL as the demo tables' owner (`pgwarden_app`, the
 * proxy's own login), behind the proxy's back: for setup and cleanup only. The caller ends it.
 */
export async function ownerClient(): Promise<pg.Client> {
  const { port } = inject('pg');
  const c = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'pgwarden_app',
    password: DEMO_APP_PASSWORD,
    database: 'demo',
  });
  await c.connect();
  return c;
}

/** A hand-driven wire client logged in through the proxy on `port` as `user` (password = name), database demo. */
export async function rawLogin(port: number, user: string): Promise<RawClient> {
  const c = await RawClient.connect(port);
  await c.login({ user, database: 'demo' }, user);
  return c;
}

/** A column denied SEE (an extra `deny SEE` rule in database demo) for the fixture's roles. */
export interface HiddenColumn {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
}

/** What a suite's proxy starts with; everything is optional (default: the demo config as it is). */
export interface ProxyFixtureOptions<U extends string = string> {
  /** The config to start from (default: the demo config, {@link demoConfigObject}). */
  readonly config?: () => Record<string, unknown>;
  /** Columns denied SEE to the roles of `hideFrom`, appended to those roles' permissions. */
  readonly hidden?: readonly HiddenColumn[];
  /** Roles the `hidden` rules are added to (default: analyst and support, i.e. alice and bob). */
  readonly hideFrom?: readonly string[];
  /** SQL run as the owner before the proxy starts (several statements, one implicit transaction; through {@link ddl}). */
  readonly setup?: string;
  /** SQL run as the owner after the proxy stopped (through {@link ddl}: retried on lock conflicts). */
  readonly teardown?: string;
  /** Users who get one pg.Client each for the whole suite (password = name, database demo). */
  readonly users?: readonly U[];
  /** Keep the proxy's log lines (audit events included) in {@link ProxyFixture.logLines}. */
  readonly log?: boolean;
  /** Test-only wall switches for this proxy (policy/wall-switches.ts); default: every wall on. */
  readonly walls?: WallSwitches;
}

/** The suite's proxy and connections, usable from its tests (not before its beforeAll ran). */
export interface ProxyFixture<U extends string = string> {
  /** The started proxy. */
  readonly proxy: TestProxy;
  /** The owner's direct connection to the test PostgreSQL, open for the whole suite. */
  readonly owner: pg.Client;
  /** The log lines written so far, when `log` was set (else empty). */
  readonly logLines: Record<string, unknown>[];
  /** The suite's pg.Client per user of `users` (filled in by beforeAll: read it inside tests). */
  readonly users: Readonly<Record<U, pg.Client>>;
  /** A new raw wire client logged in as `user`; the test ends it. */
  raw(user: string): Promise<RawClient>;
}

/**
 * Registers beforeAll/afterAll hooks in the current suite (file or describe block) that run
 * `setup` as the owner, start a proxy with the config plus the `hidden` deny rules, open the
 * `users`' clients; and afterwards close them, stop the proxy and run `teardown`. Returns the
 * fixture, whose members are available inside the suite's tests. Replaces the setup blocks each
 * attack and e2e suite used to repeat.
 */
export function useProxyFixture<U extends string = never>(
  opts: ProxyFixtureOptions<U> = {},
): ProxyFixture<U> {
  const logLines: Record<string, unknown>[] = [];
  const users = {} as Record<U, pg.Client>;
  let proxy: TestProxy | undefined;
  let owner: pg.Client | undefined;

  beforeAll(async () => {
    owner = await ownerClient();
    if (opts.setup) await ddl(owner, opts.setup);
    const cfg = (opts.config ?? demoConfigObject)();
    if (opts.hidden?.length) {
      const roles = cfg.roles as Record<string, { permissions: Record<string, unknown>[] }>;
      for (const role of opts.hideFrom ?? ['analyst', 'support']) {
        for (const h of opts.hidden) {
          roles[role]?.permissions.push({
            effect: 'deny',
            actions: ['SEE'],
            database: 'demo',
            schema: h.schema,
            table: h.table,
            column: h.column,
          });
        }
      }
    }
    proxy = await startTestProxy(cfg, {
      ...(opts.log ? { logLines } : {}),
      ...(opts.walls ? { walls: opts.walls } : {}),
    });
    for (const user of opts.users ?? []) users[user] = await proxy.client(user);
  });

  afterAll(async () => {
    for (const user of opts.users ?? []) await users[user]?.end();
    await proxy?.close();
    if (owner) {
      if (opts.teardown) await ddl(owner, opts.teardown);
      await owner.end();
    }
  });

  return {
    get proxy() {
      if (!proxy) throw new Error('the fixture proxy is used before its beforeAll ran');
      return proxy;
    },
    get owner() {
      if (!owner) throw new Error('the fixture owner connection is used before its beforeAll ran');
      return owner;
    },
    logLines,
    users,
    raw(user: string) {
      if (!proxy) throw new Error('the fixture proxy is used before its beforeAll ran');
      return rawLogin(proxy.port, user);
    },
  };
}

// The DDL benches' world: an embedded PostgreSQL with the demo database (and a view reading users), and pgwarden on it under roles single or managed.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import YAML from 'yaml';
import { DEMO_APP_PASSWORD, DEMO_APP_ROLE, DEMO_DIR, ensureDemoDatabase } from '../src/embedded/demo.js';
import { type EmbeddedServer, startEmbeddedPostgres } from '../src/embedded/postgres.js';
import { parseConfig } from '../src/policy/config-load.js';
import { startProxy } from '../src/proxy/server.js';

type ProxyServer = Awaited<ReturnType<typeof startProxy>>;

import { makeWorkDir } from './setup.js';

/** The running demo database, how to reach it directly, and how to start pgwarden on it. */
export interface DemoWorld {
  readonly server: EmbeddedServer;
  /** The tables' owner, as pgwarden logs in upstream (direct connections). */
  readonly app: pg.ClientConfig;
  /** pgwarden with the demo config, `roles` set on database demo, logging to `logger`. */
  start(roles: 'managed' | 'single', logger: Logger): Promise<ProxyServer>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/** Starts the world: the demo schema and rows, plus `user_contacts` (a view reading users, as issue 15's repro). */
export async function startDemoWorld(): Promise<DemoWorld> {
  const work = makeWorkDir();
  const server = await startEmbeddedPostgres({ dataDir: path.join(work, 'data'), persistent: false });
  await ensureDemoDatabase(server);
  const app = { host: server.host, port: server.port, user: DEMO_APP_ROLE, password: DEMO_APP_PASSWORD };
  const setup = new pg.Client({ ...app, database: 'demo' });
  await setup.connect();
  await setup.query('CREATE VIEW user_contacts AS SELECT id, name, email FROM users');
  await setup.end();
  const file = path.join(DEMO_DIR, 'pgwarden.yaml');
  const raw = YAML.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  raw.listen = '127.0.0.1:0';
  const env = {
    ...process.env,
    PGWARDEN_UPSTREAM_PORT: String(server.port),
    PGWARDEN_UPSTREAM_PASSWORD: DEMO_APP_PASSWORD,
  };
  const demo = (raw.databases as Record<string, Record<string, unknown>>).demo as Record<string, unknown>;
  return {
    server,
    app,
    start(roles, logger) {
      demo.roles = roles;
      return startProxy(parseConfig(YAML.stringify(raw), file, env), logger);
    },
    async stop() {
      await server.stop();
      fs.rmSync(work, { recursive: true, force: true });
    },
  };
}

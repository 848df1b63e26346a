// Starts the one embedded PostgreSQL every e2e test shares, with the demo database loaded.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { ensureDemoDatabase } from '../src/embedded/demo.js';
import { type EmbeddedServer, startEmbeddedPostgres } from '../src/embedded/postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    pg: { host: string; port: number; superuser: string; superuserPassword: string };
  }
}

let server: EmbeddedServer | undefined;

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Under os.tmpdir(): the postgres OS user must be able to enter every parent folder.
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-test-'));
  fs.chmodSync(base, 0o755);
  server = await startEmbeddedPostgres({
    dataDir: path.join(base, 'data'),
    persistent: false,
    // No background ANALYZE: plans (and so row order) must not depend on when autovacuum ran
    // (the noninterference suite compares databases that differ only in hidden values).
    settings: { max_connections: '300', autovacuum: 'off' },
  });
  await ensureDemoDatabase(server);
  project.provide('pg', {
    host: server.host,
    port: server.port,
    superuser: server.superuser,
    superuserPassword: server.superuserPassword,
  });
  return async () => {
    await server?.stop();
    fs.rmSync(base, { recursive: true, force: true });
  };
}

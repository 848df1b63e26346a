// A second embedded PostgreSQL that speaks TLS with the test certificate (and refuses plaintext), for upstream TLS tests.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { type EmbeddedServer, startEmbeddedPostgres } from '../../src/embedded/postgres.js';

/** The test TLS material (test/fixtures/tls/README.md). */
export const TLS_DIR = path.resolve(import.meta.dirname, '../fixtures/tls');
export const TLS_FILES = {
  ca: path.join(TLS_DIR, 'ca.crt'),
  otherCa: path.join(TLS_DIR, 'other-ca.crt'),
  cert: path.join(TLS_DIR, 'server.crt'),
  key: path.join(TLS_DIR, 'server.key'),
};

/**
 * Starts PostgreSQL with `ssl = on` (the test certificate for localhost and 127.0.0.1) and a
 * pg_hba.conf that rejects every connection that is not encrypted. Stop it with `stop()`.
 */
export async function startTlsPostgres(): Promise<EmbeddedServer> {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-tls-'));
  fs.chmodSync(base, 0o755);
  const dataDir = path.join(base, 'data');
  const server = await startEmbeddedPostgres({ dataDir, persistent: false });
  // The key must belong to the server's OS user and be private to it (be-secure-common.c).
  const owner = fs.statSync(dataDir);
  for (const f of ['server.crt', 'server.key']) {
    const to = path.join(dataDir, f);
    fs.copyFileSync(path.join(TLS_DIR, f), to);
    fs.chownSync(to, owner.uid, owner.gid);
    fs.chmodSync(to, 0o600);
  }
  const hba = path.join(dataDir, 'pg_hba.conf');
  fs.writeFileSync(hba, `hostnossl all all 0.0.0.0/0 reject\n${fs.readFileSync(hba, 'utf8')}`);
  const admin = new pg.Client({
    host: server.host,
    port: server.port,
    user: server.superuser,
    password: server.superuserPassword,
    database: 'postgres',
  });
  await admin.connect();
  await admin.query(`ALTER SYSTEM SET ssl_cert_file = '${path.join(dataDir, 'server.crt')}'`);
  await admin.query(`ALTER SYSTEM SET ssl_key_file = '${path.join(dataDir, 'server.key')}'`);
  await admin.query('ALTER SYSTEM SET ssl = on');
  await admin.query('SELECT pg_reload_conf()');
  await admin.end();
  return {
    ...server,
    stop: async () => {
      await server.stop();
      fs.rmSync(base, { recursive: true, force: true });
    },
  };
}

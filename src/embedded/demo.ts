// Creates the demo database (examples/demo) and its non-superuser owner on an embedded server.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { EmbeddedServer } from './postgres.js';

/**
 * The role that owns the demo tables and that the proxy logs in as upstream (never a superuser).
 * It has CREATEROLE: the demo database is `roles: managed`, and this is its administration login
 * (it makes the workspace roles and the set logins, and grants them what the rules allow).
 */
export const DEMO_APP_ROLE = 'pgwarden_app';
/** Its password on the embedded server; the demo config reads it from `${PGWARDEN_UPSTREAM_PASSWORD}`. */
export const DEMO_APP_PASSWORD = 'pgwarden-app-demo';

/**
 * Makes {@link DEMO_APP_ROLE} exist with LOGIN, CREATEROLE and its demo password (a data folder from
 * before managed roles gets CREATEROLE added). `admin` is a superuser connection. Idempotent; a
 * concurrent creation (42710, 23505) is fine.
 */
export async function ensureDemoAppRole(admin: pg.ClientBase): Promise<void> {
  const role = await admin.query<{ createrole: boolean }>(
    'SELECT rolcreaterole AS createrole FROM pg_roles WHERE rolname = $1',
    [DEMO_APP_ROLE],
  );
  if (role.rows[0]?.createrole) return;
  try {
    if (role.rowCount === 0)
      await admin.query(`CREATE ROLE ${DEMO_APP_ROLE} LOGIN CREATEROLE PASSWORD '${DEMO_APP_PASSWORD}'`);
    else await admin.query(`ALTER ROLE ${DEMO_APP_ROLE} CREATEROLE`);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code !== '42710' && code !== '23505') throw e;
  }
}

/** The folder holding schema.sql, data.sql and pgwarden.yaml. */
export const DEMO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/demo');

/**
 * Makes sure `database` exists on `server`, owned by {@link DEMO_APP_ROLE}, holding the demo
 * schema and rows. Idempotent: an existing database is left as it is.
 * Returns true when it created the database.
 */
export async function ensureDemoDatabase(server: EmbeddedServer, database = 'demo'): Promise<boolean> {
  const admin = new pg.Client({
    host: server.host,
    port: server.port,
    user: server.superuser,
    password: server.superuserPassword,
    database: 'postgres',
  });
  await admin.connect();
  try {
    await ensureDemoAppRole(admin);
    const db = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (db.rowCount !== 0) return false;
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)} OWNER ${DEMO_APP_ROLE}`);
  } finally {
    await admin.end();
  }
  const app = new pg.Client({
    host: server.host,
    port: server.port,
    user: DEMO_APP_ROLE,
    password: DEMO_APP_PASSWORD,
    database,
  });
  await app.connect();
  try {
    await app.query(fs.readFileSync(path.join(DEMO_DIR, 'schema.sql'), 'utf8'));
    await app.query(fs.readFileSync(path.join(DEMO_DIR, 'data.sql'), 'utf8'));
  } finally {
    await app.end();
  }
  return true;
}

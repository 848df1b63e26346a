// Versioned migrations of pgwarden's own `pgwarden` schema in a PostgreSQL database, applied once each at start.
import type pg from 'pg';

/** One migration: a unique name (`policy-001-tables`; the prefix says whose tables) and its SQL. */
export interface Migration {
  readonly name: string;
  readonly sql: string;
}

/** The advisory lock key every pgwarden instance takes while migrating (so two starts do not race). */
const MIGRATION_LOCK = 0x70677764; // 'pgwd'

/**
 * Applies, in order and each in its own transaction, every migration of `migrations` not yet recorded
 * in `pgwarden.schema_migrations`; records each. Instances starting at once serialize on an advisory
 * lock, so each migration runs exactly once. Output: the names applied now (empty when up to date).
 * Other components keeping tables in the `pgwarden` schema (issue 17's managed roles) use the same
 * runner with their own name prefix. Throws the server's error (e.g. 42501 when the login may not
 * create the schema); a failed migration is rolled back and nothing after it runs.
 */
export async function applyMigrations(
  client: pg.ClientBase,
  migrations: readonly Migration[],
): Promise<string[]> {
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await client.query(
      `CREATE SCHEMA IF NOT EXISTS pgwarden;
       CREATE TABLE IF NOT EXISTS pgwarden.schema_migrations (
         name text PRIMARY KEY,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const done = new Set(
      (await client.query<{ name: string }>('SELECT name FROM pgwarden.schema_migrations')).rows.map(
        (r) => r.name,
      ),
    );
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.name)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO pgwarden.schema_migrations (name) VALUES ($1)', [m.name]);
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK');
        throw e;
      }
      applied.push(m.name);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
  }
}

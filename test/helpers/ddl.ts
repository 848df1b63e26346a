// DDL for test fixtures in the shared test database, retried when it meets a concurrent test's locks.
import type pg from 'pg';

/**
 * Runs `sql` (DDL such as `drop schema … cascade`), retrying up to `attempts` times on
 * 40P01 deadlock_detected and 55P03 lock_not_available: test files run in parallel on one
 * database, and dropping objects that depend on shared tables (views over public.users) can
 * deadlock with another file's statements. Rejects with the last error.
 */
export async function ddl(client: pg.Client, sql: string, attempts = 5): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      await client.query(sql);
      return;
    } catch (e) {
      const code = (e as { code?: string }).code;
      if (i >= attempts || (code !== '40P01' && code !== '55P03')) throw e;
      await new Promise((r) => setTimeout(r, 50 * i));
    }
  }
}

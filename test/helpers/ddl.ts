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

/**
 * DDL for `schema`.parent (id primary key; rows 1, 2) and `schema`.child, whose parent_id references
 * parent ON UPDATE CASCADE and whose CHECK (parent_id < 100 or secret is null) reads the column
 * `secret` (child 1 holds 'child-secret-1', child 2 NULL): a cascade from a visible key into a CHECK
 * over a column a suite hides. Returns the statements as one string; the schema must exist.
 */
export function cascadeIntoCheckTables(schema: string): string {
  return `
    create table ${schema}.parent (id int primary key, name text);
    insert into ${schema}.parent values (1, 'p1'), (2, 'p2');
    create table ${schema}.child (id int primary key,
                                  parent_id int references ${schema}.parent (id) on update cascade,
                                  secret text, check (parent_id < 100 or secret is null));
    insert into ${schema}.child values (1, 1, 'child-secret-1'), (2, 2, null);
  `;
}

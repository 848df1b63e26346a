// Waiting until a statement sent through the proxy is running in the test PostgreSQL (so a cancel or a shutdown finds it running, not yet on its way).
import pg from 'pg';
import { inject } from 'vitest';

/**
 * Resolves once at least `count` backends of the test PostgreSQL are running (pg_stat_activity
 * `state = 'active'`) a statement whose text contains `fragment`; seen as the superuser, so every
 * session's query text is visible. Use a fragment no other test file runs (a distinct number in
 * `pg_sleep(…)`): files run in parallel against the same PostgreSQL. Input: the fragment, the count
 * (default 1), a bound in ms (default 20 s, generous for a loaded machine), and `done`: resolves
 * early once it returns true (a short statement that may have ended before it was seen). Throws naming the
 * fragment when the bound passes first. A fixed sleep before a cancel or a shutdown is a race: on
 * a loaded machine the statement may not have reached the upstream yet.
 */
export async function untilRunningUpstream(
  fragment: string,
  count = 1,
  timeoutMs = 20_000,
  done: () => boolean = () => false,
): Promise<void> {
  const { host, port, superuser, superuserPassword } = inject('pg');
  const c = new pg.Client({ host, port, user: superuser, password: superuserPassword, database: 'postgres' });
  await c.connect();
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const r = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
        [`%${fragment}%`],
      );
      if ((r.rows[0]?.n ?? 0) >= count || done()) return;
      if (Date.now() > deadline)
        throw new Error(
          `fewer than ${count} statements with ${fragment} running upstream after ${timeoutMs} ms`,
        );
      await new Promise((res) => setTimeout(res, 25));
    }
  } finally {
    await c.end();
  }
}

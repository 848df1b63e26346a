// Applying a grant difference inside the sync's transaction: one message, or one statement at a time when an object is gone.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Catalog } from '../catalog/types.js';
import type { PrivilegeKey } from './grant-plan.js';
import { grantDiff, type HeldPrivileges } from './grant-sync.js';

/**
 * SQLSTATEs of a GRANT or REVOKE whose object was dropped since the catalog was read:
 * undefined_table, undefined_column, invalid_schema_name, undefined_object.
 */
const GONE: ReadonlySet<string> = new Set(['42P01', '42703', '3F000', '42704']);

/**
 * SQLSTATEs worth one more try at once: concurrent DDL on the same catalog rows ("tuple
 * concurrently updated", XX000), deadlock_detected, serialization_failure.
 */
const TRANSIENT: ReadonlySet<string> = new Set(['XX000', '40P01', '40001']);

/** Runs `f`, once more after 50 ms when it rejects with a {@link TRANSIENT} SQLSTATE; else rejects as `f` does. */
export async function retryTransient<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (!TRANSIENT.has((e as { code?: string }).code ?? '')) throw e;
    await new Promise((r) => setTimeout(r, 50));
    return f();
  }
}

/**
 * Takes `role` from `held` to `desired` (grant-sync.ts grantDiff) on `c`, inside the caller's
 * transaction: all statements in one message under a savepoint (one round trip); when one fails because its
 * object was dropped meanwhile (DDL behind pgwarden's back, {@link GONE}), again one statement at
 * a time, skipping those whose object is gone (a privilege on it is gone with it; logged). Output:
 * how many statements were applied. Rejects with any other server error (the caller rolls back).
 */
export async function applyGrants(
  c: pg.ClientBase,
  role: string,
  held: HeldPrivileges,
  desired: ReadonlySet<PrivilegeKey>,
  catalog: Catalog | undefined,
  log: Logger,
): Promise<number> {
  const statements = grantDiff(role, held, desired, catalog);
  if (statements.length === 0) return 0;
  return applyInMessage(c, [{ role, statements }], '', log);
}

/** One role's grant difference to apply ({@link applyGrantsAndCommit}). */
export interface RoleGrants {
  readonly role: string;
  readonly held: HeldPrivileges;
  readonly desired: ReadonlySet<PrivilegeKey>;
}

/**
 * {@link applyGrants} for each of `changes`, then COMMIT of the caller's transaction, in one round
 * trip: every role's statements in one message under one savepoint, COMMIT at its end (COMMIT alone
 * when nothing changes). When one fails because its object is gone, one statement at a time as
 * applyGrants does, then COMMIT. Output: how many statements were applied. Rejects with any other
 * server error (the transaction has then failed: the caller rolls back).
 */
export async function applyGrantsAndCommit(
  c: pg.ClientBase,
  changes: readonly RoleGrants[],
  catalog: Catalog | undefined,
  log: Logger,
): Promise<number> {
  const diffs = changes
    .map((x) => ({ role: x.role, statements: grantDiff(x.role, x.held, x.desired, catalog) }))
    .filter((x) => x.statements.length > 0);
  if (diffs.length === 0) {
    await c.query('COMMIT');
    return 0;
  }
  return applyInMessage(c, diffs, ';\nCOMMIT', log);
}

/**
 * The statements of `diffs` in one message under the savepoint `pgwarden_grants`, `tail` (`''`, or
 * `;\nCOMMIT`) after its release; when one fails because its object is gone, back to the savepoint
 * and one statement at a time, then `tail`. Output: how many were applied.
 */
async function applyInMessage(
  c: pg.ClientBase,
  diffs: readonly { role: string; statements: readonly string[] }[],
  tail: string,
  log: Logger,
): Promise<number> {
  const all = diffs.flatMap((x) => x.statements);
  // One round trip: the savepoint, the statements and its release in one message (an error stops
  // the message there; the savepoint made before it is rolled back to).
  try {
    await c.query(
      `SAVEPOINT pgwarden_grants;\n${all.join(';\n')};\nRELEASE SAVEPOINT pgwarden_grants${tail}`,
    );
    return all.length;
  } catch (e) {
    if (!GONE.has((e as { code?: string }).code ?? '')) throw e;
    await c.query('ROLLBACK TO SAVEPOINT pgwarden_grants');
  }
  let applied = 0;
  for (const d of diffs) applied += await oneByOne(c, d.role, d.statements, log);
  await c.query(`RELEASE SAVEPOINT pgwarden_grants${tail}`);
  return applied;
}

/** `statements` of `role` one at a time, each under a savepoint, skipping those whose object is gone (logged). */
async function oneByOne(
  c: pg.ClientBase,
  role: string,
  statements: readonly string[],
  log: Logger,
): Promise<number> {
  let applied = 0;
  for (const sql of statements) {
    await c.query('SAVEPOINT pgwarden_grant');
    try {
      await c.query(sql);
      await c.query('RELEASE SAVEPOINT pgwarden_grant');
      applied++;
    } catch (e) {
      if (!GONE.has((e as { code?: string }).code ?? '')) throw e;
      await c.query('ROLLBACK TO SAVEPOINT pgwarden_grant');
      log.info({ event: 'grant-skipped', role, sql, err: (e as Error).message }, 'object gone');
    }
  }
  return applied;
}

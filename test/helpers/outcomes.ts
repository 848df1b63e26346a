// What a statement did through pgwarden, for the attack and enforcement suites: SQLSTATE or rows, cells, errors.
import type pg from 'pg';
import { decodeDataRow } from '../../src/wire/backend.js';
import { BackendCode } from '../../src/wire/codes.js';
import { decodeErrorResponse } from '../../src/wire/error-fields.js';
import type { Frame } from '../../src/wire/framer.js';

/** The SQLSTATE a statement fails with, or 'ok' with its rows. */
export async function outcome(c: pg.Client, sql: string): Promise<{ code: string; rows: unknown[] }> {
  return c.query(sql).then(
    (r) => ({ code: 'ok', rows: r.rows }),
    (e: pg.DatabaseError) => ({ code: e.code ?? 'unknown', rows: [] }),
  );
}

/** Runs `sql` in a transaction that is rolled back (a writer's statements leave nothing behind). */
export async function inRollback(c: pg.Client, sql: string): Promise<{ code: string; rows: unknown[] }> {
  await c.query('begin');
  try {
    return await outcome(c, sql);
  } finally {
    await c.query('rollback');
  }
}

/** Every DataRow cell of `frames` as text ('NULL' for a NULL). */
export function cells(frames: readonly Frame[]): string[] {
  return frames
    .filter((f) => f.code === BackendCode.DataRow)
    .flatMap((f) => decodeDataRow(f.payload).map((c) => c?.toString() ?? 'NULL'));
}

/** The SQLSTATEs of the ErrorResponses among `frames`. */
export function errorCodes(frames: readonly Frame[]): string[] {
  return frames
    .filter((f) => f.code === BackendCode.ErrorResponse)
    .map((f) => decodeErrorResponse(f.payload).code ?? '');
}

/** Some of the demo's hidden values (users 1–3), which must never come back in clear. */
export const SSNS = ['901-13-7919', '902-16-5838', '903-19-3757'];
export const EMAILS = ['ada.tervo@example.com', 'bram.wendt@example.com', 'cleo.zeller@example.com'];

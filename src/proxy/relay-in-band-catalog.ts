// pgwarden's own catalog reads (and other own statements) on a session's upstream connection, their replies consumed by the relay.
import pg from 'pg';
import type { ReadBase } from '../catalog/catalog-changes.js';
import {
  type ChangedScope,
  IN_BAND_STATEMENTS,
  inBandExecuteHead,
  inBandExecuteReads,
  inBandPrepares,
  READ_PATH,
} from '../catalog/catalog-reads.js';
import {
  buildCatalog,
  CATALOG_READS,
  NeedsFullRead,
  RESULT,
  type ResultRows,
  readBaseOf,
} from '../catalog/read-catalog.js';
import type { Catalog } from '../catalog/types.js';
import { IN_BAND_STATEMENT_PREFIX } from '../sql/reserved-statement-names.js';
import { decodeDataRow, decodeRowDescription } from '../wire/backend.js';
import { BackendCode } from '../wire/codes.js';
import { decodeErrorResponse } from '../wire/error-fields.js';
import type { Frame } from '../wire/framer.js';
import { query as encodeQuery } from '../wire/frontend-encode.js';
import { RelayCore } from './relay-core.js';

/** The relay's in-band catalog read: sent as one Simple Query, every reply consumed here (none reaches the client). */
export abstract class InBandCatalogRelay extends RelayCore {
  /**
   * Reads the catalog on this session's upstream connection (it alone sees the session's
   * uncommitted DDL and temporary tables): inside a transaction block within a savepoint that
   * is rolled back (so its `SET LOCAL search_path` leaves no trace), else in its own read-only
   * transaction. Resolves null when the connection is not free (replies owed, or a failed
   * transaction) or the read fails. `version` must be unique among catalogs (decision caches key on it).
   * With `base` (the shared catalog), only what changed since it was read is read (a schema
   * renamed or a cast changed: everything). The read never queues behind another session's lock
   * for more than 200 ms (`lock_timeout`; views whose tables another session locks are not
   * waited for, see buildCatalog); this session's own locks do not block it.
   */
  async readInBandCatalog(version: number, base?: Catalog): Promise<Catalog | null> {
    // Not when replies are owed, the transaction has failed, or an extended-protocol batch has an
    // implicit transaction open (neither BEGIN nor SAVEPOINT may start there).
    if (this.expects.length > 0 || this.status === 'E' || (this.extendedOpen && this.status === 'I')) {
      this.o.log.debug(
        { event: 'in-band-catalog', expects: this.expects.map((e) => e.t), status: this.status },
        'connection not free',
      );
      return null;
    }
    const inTx = this.status === 'T';
    // The catalog rows must be current: inside a REPEATABLE READ or SERIALIZABLE transaction the
    // reads would see the transaction's old snapshot, while Postgres resolves names and views with
    // a fresh catalog snapshot — a differential, so such a read is refused (isolation checked below).
    // statement_timeout is lifted and lock_timeout set for the read only (set_config(…, true) is
    // SET LOCAL, undone with the savepoint/COMMIT).
    const open = inTx ? 'SAVEPOINT pgwarden_catalog;' : 'BEGIN ISOLATION LEVEL READ COMMITTED, READ ONLY;';
    const close = inTx
      ? 'ROLLBACK TO SAVEPOINT pgwarden_catalog;RELEASE SAVEPOINT pgwarden_catalog;'
      : 'COMMIT;';
    // Everything runs under READ_PATH (the client's path could put its own schemas, or its
    // temporary relations, before pg_catalog), except the path the head reports: the client's,
    // taken first, fully qualified.
    // plan_cache_mode: the prepared reads run with their generic plans (planned once per connection).
    const limits = `SELECT pg_catalog.set_config('statement_timeout', '0', true), pg_catalog.set_config('lock_timeout', '200ms', true), pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);
SELECT pg_catalog.current_schemas(false)::pg_catalog.text[] AS path;${READ_PATH};`;
    const iso = `SELECT current_setting('transaction_isolation') AS iso;`;
    /** The head's result set (at `at`) with the client's path (results[2], taken before READ_PATH) in its row. */
    const headOf = (rs: ResultRows[], at = HEAD_AT): ResultRows | undefined => {
      const path = (rs[2]?.rows[0] as { path?: unknown } | undefined)?.path;
      const h = rs[at];
      const row = h?.rows[0];
      return h && row && Array.isArray(path) ? { rows: [{ ...(row as object), path }] } : undefined;
    };
    const readBase = base ? readBaseOf(base) : undefined;
    const t0 = performance.now();
    let got: ResultRows[];
    let level: string | undefined;
    if (readBase) {
      // Incremental, in two round trips: the head searches what changed, then the reads take its
      // answer spelled out. Nothing is handed on through settings: a `set_config` in the client's
      // session would leave a `pgwarden_catalog.*` placeholder behind (SHOW, current_setting).
      // Every statement is prepared on this connection once (under READ_PATH, in the first read's
      // message), under names the client may not use (reserved-statement-names.ts).
      const prefix = this.inBandStatements ?? `${IN_BAND_STATEMENT_PREFIX}_${++inBandGeneration}`;
      const prepare = this.inBandStatements === undefined ? inBandPrepares(prefix) : '';
      const headAt = HEAD_AT + (prepare ? IN_BAND_STATEMENTS : 0);
      const first = await this.internalOutcome(
        `${open}${limits}${prepare}${inBandExecuteHead(prefix, readBase)}`,
      );
      // Prepared (PREPARE is not undone by a rollback) once every statement before the head ran.
      if (first.rows || first.completed >= headAt) this.inBandStatements = prefix;
      const headRows = first.rows ? headOf(first.rows, headAt) : undefined;
      const headRow = headRows?.rows[0] as Parameters<typeof changedScope>[0] | undefined;
      const scope = headRow ? changedScope(headRow, readBase) : undefined;
      const rest = scope
        ? await this.internalOutcome(`${inBandExecuteReads(prefix, scope)}${iso}${close}`)
        : null;
      // A statement gone (26000: dropped behind pgwarden's back) is prepared again, under new names.
      if (first.sqlstate === '26000' || rest?.sqlstate === '26000') this.inBandStatements = undefined;
      if (!headRows || !rest?.rows) {
        // A read that failed half-way leaves a transaction open (idle) or aborted (inside the
        // client's): put the session back as it was before answering.
        this.cleanUpInternal(inTx);
        return null;
      }
      got = [headRows, ...rest.rows.slice(0, RESULT.count - 1)];
      level = (rest.rows[RESULT.count - 1]?.rows[0] as { iso?: string } | undefined)?.iso;
    } else {
      const results = await this.internalRows(`${open}${limits}${CATALOG_READS}${iso}${close}`);
      const headRows = results ? headOf(results) : undefined;
      if (!results || !headRows) {
        if (!results) this.cleanUpInternal(inTx);
        return null;
      }
      got = [headRows, ...results.slice(HEAD_AT + 1, HEAD_AT + RESULT.count)];
      level = (results[HEAD_AT + RESULT.count]?.rows[0] as { iso?: string } | undefined)?.iso;
    }
    const queried = performance.now();
    try {
      if (level !== 'read committed')
        throw new Error(`transaction isolation ${level}: catalog rows would be stale`);
      const catalog = buildCatalog(got, version, readBase ? base : undefined);
      this.o.log.debug(
        {
          event: 'in-band-catalog-read',
          incremental: readBase !== undefined,
          relations: catalog.relations.size,
          ms: Math.round((performance.now() - t0) * 10) / 10,
          query_ms: Math.round((queried - t0) * 10) / 10,
        },
        'in-band catalog read',
      );
      return catalog;
    } catch (e) {
      // A change the incremental read cannot apply: read everything (the connection is free again).
      if (e instanceof NeedsFullRead) return this.readInBandCatalog(version);
      this.o.log.warn(
        { event: 'in-band-catalog', err: (e as Error).message },
        'in-band catalog read not used',
      );
      return null;
    }
  }

  /**
   * Set when pgwarden's own Simple Query went upstream: Postgres drops the unnamed prepared
   * statement at every Simple Query (exec_simple_query), so the client's, which pgwarden still
   * holds, must be prepared again before its next Bind (extended protocol relay).
   */
  protected unnamedDroppedUpstream = false;

  /** Sends `sql` as one of pgwarden's own Simple Queries (its replies are consumed by the caller's expect). */
  private sendInternalQuery(sql: string): void {
    this.unnamedDroppedUpstream = true;
    this.send(encodeQuery(sql));
  }

  /**
   * The prefix of the names of the statements of the in-band read prepared on this connection
   * (catalog-reads.ts inBandPrepares), undefined while none are: the client's DEALLOCATE ALL and
   * DISCARD ALL drop them ({@link inBandStatementsDropped}).
   */
  private inBandStatements: string | undefined;

  /** The client's DEALLOCATE ALL or DISCARD ALL ran: the in-band read's statements are gone, prepared again when next needed. */
  protected inBandStatementsDropped(): void {
    this.inBandStatements = undefined;
  }

  /** Sends one of pgwarden's own Simple Queries; resolves its result sets, or null when it failed. */
  private internalRows(sql: string): Promise<ResultRows[] | null> {
    return this.internalOutcome(sql).then((o) => o.rows);
  }

  /**
   * Sends one of pgwarden's own Simple Queries; resolves its result sets (`rows`, null when it
   * failed), how many of its statements completed, and the SQLSTATE of its error.
   */
  private internalOutcome(
    sql: string,
  ): Promise<{ rows: ResultRows[] | null; completed: number; sqlstate?: string }> {
    return new Promise((resolve) => {
      this.expects.push({
        t: 'internal',
        results: [],
        fields: [],
        names: [],
        rows: [],
        failed: false,
        done: (rows, completed, sqlstate) =>
          resolve({ rows, completed, ...(sqlstate !== undefined ? { sqlstate } : {}) }),
      });
      this.sendInternalQuery(sql);
    });
  }

  /**
   * Runs one of pgwarden's own statements (BEGIN, SAVEPOINT, ROLLBACK) on the session's
   * connection, every reply consumed here; resolves true when it succeeded.
   */
  protected internal(sql: string): Promise<boolean> {
    return new Promise((resolve) => {
      this.expects.push({
        t: 'internal',
        results: [],
        fields: [],
        names: [],
        rows: [],
        failed: false,
        done: (results) => resolve(results !== null),
      });
      this.sendInternalQuery(sql);
    });
  }
  /**
   * Runs `sql` (pgwarden's own statement, e.g. the ROLLBACK at shutdown) on this session's
   * upstream connection, its replies consumed here. Only when no replies are owed. Resolves true
   * when it ran without error within `timeoutMs` (after a ROLLBACK the status is idle), false
   * otherwise; never rejects. Source: issue 16 item 1.
   */
  runInternal(sql: string, timeoutMs: number): Promise<boolean> {
    if (this.expects.length > 0) return Promise.resolve(false);
    const ran = this.internal(sql).then((ok) => {
      if (ok && /^\s*rollback\s*;?\s*$/i.test(sql)) this.status = 'I';
      return ok;
    });
    this.o.upstream.socket.uncork();
    return Promise.race([ran, new Promise<boolean>((r) => setTimeout(() => r(false), timeoutMs).unref())]);
  }

  /** After a failed in-band read: ROLLBACK (it was ours) or back to the savepoint (the client's transaction). */
  private cleanUpInternal(inTx: boolean): void {
    this.expects.push({
      t: 'internal',
      results: [],
      fields: [],
      names: [],
      rows: [],
      failed: false,
      done: () => {},
    });
    this.sendInternalQuery(
      inTx ? 'ROLLBACK TO SAVEPOINT pgwarden_catalog;RELEASE SAVEPOINT pgwarden_catalog;' : 'ROLLBACK;',
    );
  }

  /** Consumes a reply of pgwarden's own catalog read; returns true when it was one. */
  protected internalReply(f: Frame): boolean {
    const head = this.expects.first;
    if (head?.t !== 'internal') return false;
    switch (f.code) {
      case BackendCode.RowDescription: {
        const fields = decodeRowDescription(f.payload);
        head.names = fields.map((x) => x.name);
        head.fields = fields.map((x) => pg.types.getTypeParser(x.typeOid, 'text') as (v: string) => unknown);
        head.rows = [];
        break;
      }
      case BackendCode.DataRow: {
        const cells = decodeDataRow(f.payload);
        const row: Record<string, unknown> = {};
        cells.forEach((c, i) => {
          row[head.names[i] as string] =
            c === null ? null : (head.fields[i] as (v: string) => unknown)(c.toString('utf8'));
        });
        head.rows.push(row);
        break;
      }
      case BackendCode.CommandComplete:
        head.results.push({ rows: head.rows });
        head.rows = [];
        head.names = [];
        head.fields = [];
        break;
      case BackendCode.ErrorResponse: {
        const err = decodeErrorResponse(f.payload);
        head.failed = true;
        head.sqlstate = err.code;
        this.o.log.warn({ event: 'in-band-catalog', err: err.message }, 'in-band catalog read failed');
        break;
      }
      case BackendCode.ReadyForQuery:
        this.expects.shift();
        head.done(head.failed ? null : head.results, head.results.length, head.sqlstate);
        break;
      default:
        break;
    }
    return true;
  }
}

/** Where the head's result set is among an in-band read's: after BEGIN/SAVEPOINT, the limits, the path and READ_PATH. */
const HEAD_AT = 4;

/** Numbers the in-band statements' names apart (a connection that prepares them again takes new ones). */
let inBandGeneration = 0;

/**
 * What the reads after an in-band head read again (its row: `reread` as int8 text), or undefined
 * when the row is not a summary. The base's system types running user code seed the types read.
 */
function changedScope(
  row: { reread?: unknown[]; types_changed?: boolean; functions_changed?: boolean },
  base: ReadBase,
): ChangedScope | undefined {
  if (!Array.isArray(row.reread) || typeof row.types_changed !== 'boolean') return undefined;
  if (typeof row.functions_changed !== 'boolean') return undefined;
  return {
    reread: row.reread.map(Number),
    typesChanged: row.types_changed,
    functionsChanged: row.functions_changed,
    systemUserCode: base.systemUserCodeTypes,
  };
}

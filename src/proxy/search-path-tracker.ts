// Tracks the session's search_path as the server does: SET, SET LOCAL, RESET, transactions, savepoints.
import type { SessionEffect } from '../sql/analysis-types.js';

type Path = readonly string[];

/** The four paths analyze() reads (sql/statement-analyzer.ts SessionPaths), as one frozen value. */
export interface SessionPaths {
  readonly searchPath: Path;
  readonly sessionSearchPath: Path;
  readonly transactionStartSearchPath: Path;
  readonly resetSearchPath: Path;
}

/**
 * The search_path the upstream session has, kept in step with it from the effects of statements
 * that completed (CommandComplete) and the transaction status of each ReadyForQuery.
 * PostgreSQL rules mirrored (src/backend/utils/misc/guc.c, "GUC and transactions"): a SET lasts
 * for the session unless its transaction rolls back; SET LOCAL lasts until the end of the
 * transaction; ROLLBACK TO SAVEPOINT undoes both back to the savepoint; the statements of one
 * simple Query (or one extended-protocol batch up to Sync) outside a transaction block form an
 * implicit transaction, so an error there undoes their SETs too; RESET and DISCARD ALL go back
 * to the value the session started with.
 */
export class SearchPathTracker {
  private session: Path;
  private current: Path;
  /** The session-level value at the start of the open (explicit or implicit) transaction. */
  private txStart: Path | null = null;
  private savepoints: { name: string; session: Path; current: Path }[] = [];
  private failedInBatch = false;
  /** Bumped on every change, so a prepared decision knows it was made under another path. */
  private generation = 0;

  /** @param reset the session's starting search_path (the startup parameter, or the login's default). */
  constructor(private readonly reset: Path) {
    this.session = reset;
    this.current = reset;
  }

  private value: SessionPaths | undefined;

  /**
   * The paths analyze() needs (sql/statement-analyzer.ts SessionPaths): the same frozen value
   * while none of the four changes, a new one when one does (callers may key on its identity).
   */
  paths(): SessionPaths {
    const tx = this.txStart ?? this.session;
    const v = this.value;
    if (
      v &&
      v.searchPath === this.current &&
      v.sessionSearchPath === this.session &&
      v.transactionStartSearchPath === tx
    )
      return v;
    this.value = Object.freeze({
      searchPath: this.current,
      sessionSearchPath: this.session,
      transactionStartSearchPath: tx,
      resetSearchPath: this.reset,
    });
    return this.value;
  }

  /** Changes whenever the effective search_path may have changed. */
  get version(): number {
    return this.generation;
  }

  /** A Query or the first message of an extended batch is about to run (status before it). */
  batchStarted(status: 'I' | 'T' | 'E'): void {
    if (status === 'I' && this.txStart === null) {
      this.txStart = this.session;
      this.failedInBatch = false;
    }
  }

  /** An ErrorResponse ended a statement of the batch. */
  statementFailed(): void {
    this.failedInBatch = true;
  }

  /** A statement completed: apply what it did to the path (only what concerns search_path). */
  completed(effects: readonly SessionEffect[]): void {
    for (const e of effects) this.apply(e);
  }

  private set(session: Path, current: Path): void {
    if (session !== this.session || current !== this.current) this.generation++;
    this.session = session;
    this.current = current;
  }

  private apply(e: SessionEffect): void {
    switch (e.kind) {
      case 'set-search-path':
        if (e.local) this.set(this.session, e.path);
        else this.set(e.path, e.path);
        return;
      case 'reset-search-path':
      case 'discard-all':
        this.set(this.reset, this.reset);
        return;
      case 'begin':
        this.txStart ??= this.session;
        return;
      case 'rollback': {
        const back = this.txStart ?? this.session;
        this.set(back, back);
        this.savepoints = [];
        // What follows in the same string runs in a new implicit transaction starting here.
        this.txStart = back;
        this.failedInBatch = false;
        return;
      }
      case 'commit':
        if (this.failedInBatch) {
          // COMMIT of a failed transaction rolls it back (its tag says ROLLBACK).
          const back = this.txStart ?? this.session;
          this.set(back, back);
        } else this.set(this.session, this.session);
        this.savepoints = [];
        this.txStart = this.session;
        this.failedInBatch = false;
        return;
      case 'savepoint':
        this.savepoints.push({ name: e.name, session: this.session, current: this.current });
        return;
      case 'rollback-to': {
        const i = this.savepoints.map((s) => s.name).lastIndexOf(e.name);
        const sp = this.savepoints[i];
        if (!sp) return;
        this.savepoints.length = i + 1;
        this.set(sp.session, sp.current);
        // The transaction is usable again: a COMMIT after this really commits.
        this.failedInBatch = false;
        return;
      }
      case 'release': {
        const i = this.savepoints.map((s) => s.name).lastIndexOf(e.name);
        if (i >= 0) this.savepoints.length = i;
        return;
      }
      default:
        return;
    }
  }

  /**
   * ReadyForQuery arrived. Back to idle ends the transaction: an implicit one that failed undoes
   * its SETs; SET LOCAL values end in every case. `T`/`E` keep the transaction open.
   */
  ready(status: 'I' | 'T' | 'E'): void {
    if (status !== 'I') return;
    if (this.failedInBatch && this.txStart !== null) this.set(this.txStart, this.txStart);
    else this.set(this.session, this.session);
    this.txStart = null;
    this.savepoints = [];
    this.failedInBatch = false;
  }
}

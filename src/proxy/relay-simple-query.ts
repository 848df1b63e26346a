// The Simple Query flow: a Query decided before it is sent, its replies matched to its statements' plans; a string that uses what it creates runs in stages.
import type { Refusal } from '../policy/decision-types.js';
import { type RewrittenSql, sentUtf8 } from '../rewrite/rewrite-sql.js';
import { decodeCommandComplete } from '../wire/backend.js';
import { BackendCode } from '../wire/codes.js';
import type { Frame } from '../wire/framer.js';
import { decodeQuery } from '../wire/frontend.js';
import { query as encodeQuery } from '../wire/frontend-encode.js';
import { blankCodePoints, sliceCodePoints } from './code-points.js';
import { FENCE_CANCEL_SQLSTATE, FENCE_TIMEOUT_MESSAGE } from './commit-fence.js';
import type { Expect } from './expected-replies.js';
import { TRANSACTION_CONTROL } from './gate-stages.js';
import { textToKeep } from './plan-audit.js';
import { commits, PREPARED_DDL_REFUSAL, preparesTransaction, ResultRelay } from './relay-results.js';
import { gate } from './statement-gate.js';
import type { GateResult, StatementPlan } from './statement-plan.js';

/** Texts longer than this (UTF-16 code units) hand the rewrite their message's bytes (RewriteContext.utf8). */
export const LONG_TEXT = 64 * 1024;

/** The savepoint a staged string runs under inside the client's own transaction block. */
const STRING_SAVEPOINT = 'pgwarden_string';

/** The message of 25P02 (in_failed_sql_transaction), as Postgres words it. */
const ABORTED = 'current transaction is aborted, commands ignored until end of transaction block';
const NOT_IN_EXTENDED =
  'pgwarden runs a string that uses what it creates in its own transaction, which cannot start inside an extended-protocol batch; send Sync first';

/** Simple Query (protocol "Simple Query"): one Query message, possibly many statements, each with its plan. */
export abstract class SimpleQueryRelay extends ResultRelay {
  /** The last rewritten Query message made, and its text's value (see rewrittenQuery). */
  private lastRewrittenQuery: { sent: RewrittenSql; bytes: Buffer } | undefined;

  protected simpleQuery(f: Frame): Promise<void> | undefined {
    const { sql } = decodeQuery(f.payload);
    this.startBatch();
    // Postgres drops the unnamed prepared statement at every Query (exec_simple_query), refused or not.
    this.statements.delete('');
    return this.withGate(
      sql,
      { bytes: f.bytes, start: 0, end: f.bytes.length, sql, started: performance.now() },
      this.queryAllowed,
      this.refuseSimple,
      // A long text's bytes are the payload (before its NUL): the rewrite edits them, not a copy.
      sql.length > LONG_TEXT ? f.payload.subarray(0, f.payload.length - 1) : undefined,
    );
  }

  /**
   * A Query allowed by the gate (`q`: where its message lies, `bytes[start, end)`, its text and when
   * it reached pgwarden): sent as it came, or as its rewritten text; a string that uses what it
   * creates runs in stages.
   */
  protected queryAllowed(
    q: { bytes: Buffer; start: number; end: number; sql: string; started: number; fenced?: boolean },
    result: GateResult & { ok: true },
  ): Promise<void> | undefined {
    const { sql, started } = q;
    const fence = this.o.fence;
    if (fence && !this.extendedOpen && this.status !== 'E') {
      // The commit fence (commit-fence.ts): a COMMIT of a transaction that changed the catalog
      // goes once the statements waiting on its locks are canceled; DDL goes up apart from a
      // COMMIT after it, and gets a COMMIT of pgwarden's own when it has none (autocommit).
      const ddlCut = fencingCut(result.plans, this.status);
      if (ddlCut !== undefined) return this.inParts(sql, ddlCut, started);
    }
    if (fence && !this.extendedOpen && this.status !== 'E' && result.rest === undefined) {
      if (this.status === 'I' && autocommitFenced(sql, result.plans))
        return this.staged(result.plans, sql, result.sent?.text ?? sql, undefined, started);
      if (!q.fenced && this.status === 'T' && result.plans.some(commits) && fence.needed())
        return this.fencedCommit({ ...q, fenced: true }, result);
    }
    if (result.rest !== undefined && result.head !== undefined) {
      const sent = result.sent?.text ?? result.head;
      // The string controls its transaction itself: run as Postgres's blocks run it (relay-string-control.ts);
      // in a failed block Postgres runs its ROLLBACK, and answers 25P02 to anything else.
      if (result.controls && !this.extendedOpen) return this.controlled(sql, result, started);
      // In a failed transaction Postgres runs nothing of the string (25P02): neither do stages.
      if (this.status === 'E' || this.extendedOpen) {
        this.batchOpen = false;
        this.refuseSimple(
          this.status === 'E'
            ? { sqlstate: '25P02', message: ABORTED }
            : result.refusal && !result.plans.some((p) => p.changesCatalog)
              ? result.refusal
              : { sqlstate: '0A000', message: NOT_IN_EXTENDED },
        );
        return undefined;
      }
      return this.staged(result.plans, result.head, sent, result.rest, started);
    }
    const cut = publishingCut(result.plans, this.status);
    if (cut !== undefined && !this.extendedOpen && this.status !== 'E')
      return this.inParts(sql, cut, started);
    const kept = textToKeep(sql, result.plans);
    this.expects.push({ t: 'query', plans: result.plans, index: 0, sql: kept, started, sent: this.gatedAt });
    // Mask at read: the rewritten text goes up instead of the caller's (wall 2).
    if (!result.sent) this.sendRange(q.bytes, q.start, q.end);
    else if (sentUtf8(result.sent)) this.sendWithText(result.sent, encodeQuery);
    else this.send(this.rewrittenQuery(result.sent));
    this.batchOpen = false;
    return undefined;
  }

  /**
   * The Query message of the rewritten text `sent`: the one made last time for the same value (a
   * text the session's memo holds, sent again), else made and kept. Never changed once made.
   */
  private rewrittenQuery(sent: RewrittenSql): Buffer {
    const last = this.lastRewrittenQuery;
    if (last && last.sent === sent) return last.bytes;
    const bytes = encodeQuery(sent.text);
    this.lastRewrittenQuery = { sent, bytes };
    return bytes;
  }

  /**
   * Runs a string whose later statements use what earlier ones create (issue 15), as Postgres
   * runs any multi-statement string: as one transaction, all or nothing. pgwarden opens it
   * (BEGIN when idle; a savepoint inside the client's transaction block), sends the decided
   * statements, decides the rest with the catalog read on this connection (it alone sees their
   * effects), sends that, and so on; then closes it (COMMIT, or RELEASE) with only its
   * ReadyForQuery reaching the client. The client sees what a direct connection sends: each
   * statement's replies, a failing statement's error as Postgres words it (its position in the
   * whole string: the parts already sent are blanked, not cut), then ReadyForQuery `I` (rolled
   * back) or `E` inside the client's block. A statement pgwarden refuses rolls back what ran
   * before it, then is answered as any refusal: nothing of the string stays. Every statement is
   * decided before it is sent.
   */
  private async staged(
    plans0: readonly StatementPlan[],
    head0: string,
    sent0: string,
    rest0: string | undefined,
    started: number,
  ): Promise<void> {
    const inTx = this.status === 'T';
    const paths = this.o.gateSession.paths;
    if (!(await this.internal(inTx ? `SAVEPOINT ${STRING_SAVEPOINT}` : 'BEGIN'))) {
      this.batchOpen = false;
      return this.refuseSimple({
        sqlstate: '58000',
        message: 'pgwarden could not open the string transaction',
      });
    }
    if (inTx) paths.completed([{ kind: 'savepoint', name: STRING_SAVEPOINT }]);
    let plans = plans0;
    let text = head0;
    // Mask at read: each stage goes up as its rewritten text (the caller's text stays for the audit).
    let sent = sent0;
    let rest: string | undefined = rest0;
    for (;;) {
      if (!(await this.runStage(plans, text, sent, started, inTx))) return this.endFailed(inTx);
      if (rest === undefined) break;
      const r = await this.gateRest(rest);
      if (!r.ok) return this.rollBackRefused(inTx, r.refusal);
      plans = r.plans;
      text = r.head ?? rest;
      sent = r.sent?.text ?? text;
      rest = r.rest;
    }
    // The commit fence: pgwarden's COMMIT of DDL goes once what waits on its locks is canceled.
    if (!inTx && this.o.fence?.needed() && !(await this.o.fence.raise())) return this.fenceRefused();
    this.batchOpen = false;
    this.finish(inTx ? `RELEASE SAVEPOINT ${STRING_SAVEPOINT}` : 'COMMIT');
    if (inTx) paths.completed([{ kind: 'release', name: STRING_SAVEPOINT }]);
  }

  /**
   * Runs a string with a COMMIT before its last statement in two Query messages, cut after the
   * COMMIT. Postgres flushes a Query's replies only at its ReadyForQuery, so the COMMIT's
   * CommandComplete would reach pgwarden only after the statements behind it (`BEGIN; CREATE OR
   * REPLACE VIEW …; COMMIT; SELECT pg_sleep(60)`): all that time other sessions would be analyzed
   * with the catalog, and set logins would hold the grants, of before the commit. The first part's
   * ReadyForQuery publishes the change (onTransactionStatus); the rest is decided again with the
   * catalog of after it and sent with the parts already sent blanked (error positions stay those
   * of the whole string). As Postgres does, nothing after a statement that failed is run; the
   * client sees one ReadyForQuery.
   */
  private async inParts(sql: string, cut: number, started: number): Promise<void> {
    const head = sliceCodePoints(sql, 0, cut);
    const r = await this.gateRest(head);
    if (!r.ok) {
      this.batchOpen = false;
      return this.refuseSimple(r.refusal);
    }
    return this.headThenRest(r.plans, head, r.sent?.text ?? head, blankCodePoints(sql, cut), started);
  }

  /**
   * Sends `head` (decided: `plans`, its text `sent` upstream) as one Query and, when all of it ran,
   * decides `rest` (the string with the head blanked) with the catalog of after it and runs that
   * as any Query: in the transaction block the head left open, or as a string of its own after the
   * head's last statement ended the transaction (inParts, and a string that controls transactions
   * run in stages before relay-string-control.ts). As Postgres does, nothing after a statement that failed is
   * run; the client sees one ReadyForQuery.
   */
  private async headThenRest(
    plans: readonly StatementPlan[],
    head: string,
    sent: string,
    rest: string,
    started: number,
  ): Promise<void> {
    const ran = await new Promise<boolean>((resolve) => {
      const e: Expect & { t: 'query' } = {
        t: 'query',
        plans,
        index: 0,
        sql: textToKeep(head, plans),
        started,
        held: (status) => {
          if (status === 'I') this.portals.clear();
          this.o.onTransactionStatus(status);
          const all = e.index >= plans.length;
          resolve(all);
          // A statement failed: Postgres ran nothing after it; this ReadyForQuery is the client's.
          return !all;
        },
      };
      this.expects.push(e);
      this.send(encodeQuery(sent));
    });
    if (!ran) {
      this.batchOpen = false;
      return;
    }
    const next = await this.gateRest(rest);
    if (!next.ok) {
      this.batchOpen = false;
      return this.refuseSimple(next.refusal);
    }
    const bytes = encodeQuery(rest);
    return this.queryAllowed({ bytes, start: 0, end: bytes.length, sql: rest, started }, next);
  }

  /**
   * A COMMIT (`q`, decided: `result`) of a transaction that changed the catalog: sent once the
   * commit fence is up and no statement of another session waits on this transaction's locks
   * (commit-fence.ts); refused when some did not end in time.
   */
  private async fencedCommit(
    q: { bytes: Buffer; start: number; end: number; sql: string; started: number; fenced?: boolean },
    result: GateResult & { ok: true },
  ): Promise<void> {
    if (result.plans.some(preparesTransaction)) {
      this.batchOpen = false;
      return this.refuseSimple(PREPARED_DDL_REFUSAL);
    }
    if (!(await this.o.fence?.raise())) return this.fenceRefused();
    return this.queryAllowed(q, result);
  }

  /** The commit fence could not clear the way for a COMMIT: the transaction is rolled back, the COMMIT answered 40001. */
  protected async fenceRefused(): Promise<void> {
    this.batchOpen = false;
    await this.internal('ROLLBACK');
    this.o.gateSession.paths.completed([{ kind: 'rollback' }]);
    this.refuseSimple({ sqlstate: FENCE_CANCEL_SQLSTATE, message: FENCE_TIMEOUT_MESSAGE });
  }

  /**
   * Sends one stage; resolves true when it ran through (its ReadyForQuery held back), false after
   * an error (inside the client's block its ReadyForQuery `E` goes on to the client).
   */
  protected runStage(
    plans: readonly StatementPlan[],
    sql: string,
    sent: string,
    started: number,
    inTx: boolean,
  ): Promise<boolean> {
    return new Promise((resolve) => {
      this.expects.push({
        t: 'query',
        plans,
        index: 0,
        sql: textToKeep(sql, plans),
        started,
        held: (status) => {
          // DDL of this stage: the next one is decided with the catalog read in-band (session-catalog.ts).
          this.o.onTransactionStatus(status);
          resolve(status === 'T');
          return status === 'E' && inTx;
        },
      });
      this.send(encodeQuery(sent));
    });
  }

  protected async gateRest(text: string): Promise<GateResult> {
    try {
      const r = await gate(text, this.o.gateSession, this.o.cache, this.o.decide);
      const kept = r.ok ? this.keepRefusal(r.plans) : undefined;
      return kept ? { ok: false, refusal: kept } : r;
    } catch (e) {
      return { ok: false, refusal: this.catalogFailure(e) };
    }
  }

  /** A statement of the string failed upstream (its error already went to the client): end as Postgres does. */
  protected endFailed(inTx: boolean): void {
    this.batchOpen = false;
    if (inTx) return;
    this.finish('ROLLBACK');
    this.o.gateSession.paths.completed([{ kind: 'rollback' }]);
  }

  /** A later statement is refused: undo what the string did, then answer as any refusal. */
  protected async rollBackRefused(inTx: boolean, r: Refusal): Promise<void> {
    this.batchOpen = false;
    const paths = this.o.gateSession.paths;
    if (inTx) {
      await this.internal(`ROLLBACK TO SAVEPOINT ${STRING_SAVEPOINT}; RELEASE SAVEPOINT ${STRING_SAVEPOINT}`);
      paths.completed([
        { kind: 'rollback-to', name: STRING_SAVEPOINT },
        { kind: 'release', name: STRING_SAVEPOINT },
      ]);
    } else {
      await this.internal('ROLLBACK');
      paths.completed([{ kind: 'rollback' }]);
    }
    this.refuseSimple(r);
  }

  /**
   * Sends pgwarden's own closing statement of a staged string (COMMIT, ROLLBACK, RELEASE): its
   * CommandComplete is dropped, an error (a deferred constraint failing at COMMIT) and its
   * ReadyForQuery go to the client.
   */
  protected finish(sql: string): void {
    this.expects.push({ t: 'finish' });
    this.send(encodeQuery(sql));
  }

  /**
   * Runs a string that controls its transaction (`sql`, decided up to its first stage: `first`)
   * statement by statement as Postgres's implicit transaction block would (relay-string-control.ts).
   */
  protected abstract controlled(
    sql: string,
    first: GateResult & { ok: true },
    started: number,
  ): Promise<void>;

  protected queryReply(head: Expect & { t: 'query' }, f: Frame): Buffer | null {
    const plan = head.plans[head.index] ?? null;
    switch (f.code) {
      case BackendCode.RowDescription:
        return this.rowDescription(plan, f);
      case BackendCode.DataRow:
        return this.dataRow(plan, f);
      case BackendCode.CommandComplete:
        if (head.own) {
          head.own = false;
          return null;
        }
        this.completed(plan, head.sql, head.started, decodeCommandComplete(f.payload), head.sent);
        head.index++;
        return f.bytes;
      default:
        return f.bytes;
    }
  }
}

/**
 * Where a decided string is cut so that a COMMIT in it publishes its transaction's catalog changes
 * before the statements behind it run (SimpleQueryRelay.inParts): the code-point offset of the
 * statement after the first COMMIT (COMMIT PREPARED too) that is not the last statement, when the
 * transaction may hold DDL (a MANAGE statement up to the COMMIT, or a transaction block already
 * open: `status` 'T'); else undefined.
 */
function publishingCut(plans: readonly StatementPlan[], status: 'I' | 'T' | 'E'): number | undefined {
  const k = plans.findIndex(commits);
  if (k < 0 || k >= plans.length - 1) return undefined;
  if (status !== 'T' && !plans.slice(0, k + 1).some((p) => p.changesCatalog)) return undefined;
  return plans[k + 1]?.statement.location;
}

/**
 * Where a decided string is cut so that its COMMIT goes up apart from the DDL before it (the commit
 * fence runs between them, commit-fence.ts): the code-point offset of the first COMMIT when a
 * statement before it may change the catalog and the transaction it ends is an explicit block (one
 * open already, `status` 'T', or a BEGIN before it: cut apart from an implicit one, the DDL would
 * commit on its own); else undefined.
 */
function fencingCut(plans: readonly StatementPlan[], status: 'I' | 'T' | 'E'): number | undefined {
  const k = plans.findIndex(commits);
  if (k <= 0) return undefined;
  const before = plans.slice(0, k);
  if (!before.some((p) => p.changesCatalog)) return undefined;
  if (status !== 'T' && !before.some((p) => p.effects.some((e) => e.kind === 'begin'))) return undefined;
  return plans[k]?.statement.location;
}

/**
 * Statements that cannot run inside a transaction block (PreventInTransactionBlock), run their own
 * transactions (CALL, DO), or read from the client (COPY): a string with one is not wrapped in
 * pgwarden's BEGIN … COMMIT.
 */
const NOT_IN_BLOCK = new Set([
  'VacuumStmt',
  'CreatedbStmt',
  'DropdbStmt',
  'AlterSystemStmt',
  'CreateTableSpaceStmt',
  'DropTableSpaceStmt',
  'ReindexStmt',
  'ClusterStmt',
  'CreateSubscriptionStmt',
  'AlterSubscriptionStmt',
  'DropSubscriptionStmt',
  'AlterDatabaseStmt',
  'CallStmt',
  'DoStmt',
  'CopyStmt',
  'TransactionStmt',
  'DiscardStmt',
  'LockStmt',
]);

/**
 * Whether a string run outside a transaction block (its statements autocommit, or one implicit
 * transaction) changes the catalog and is run in pgwarden's own BEGIN … COMMIT instead, so that
 * its COMMIT passes the commit fence: it has a statement that may change the catalog, none that
 * controls a transaction, none of NOT_IN_BLOCK, and no CONCURRENTLY.
 */
function autocommitFenced(sql: string, plans: readonly StatementPlan[]): boolean {
  if (!plans.some((p) => p.changesCatalog)) return false;
  return plans.every(
    (p) =>
      !NOT_IN_BLOCK.has(p.statement.nodeType) &&
      !p.effects.some((e) => TRANSACTION_CONTROL.has(e.kind)) &&
      !(
        p.changesCatalog &&
        /concurrently/i.test(sliceCodePoints(sql, p.statement.location, p.statement.length))
      ),
  );
}

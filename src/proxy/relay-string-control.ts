// A string that controls its transaction and uses what it creates, run statement by statement as Postgres's implicit transaction block runs it (issue 15).
import type { Refusal } from '../policy/decision-types.js';
import { query as encodeQuery } from '../wire/frontend-encode.js';
import { blankCodePoints, sliceCodePoints } from './code-points.js';
import type { Expect } from './expected-replies.js';
import { pathsFor } from './gate-session.js';
import { controlsTransaction, implicitControl } from './gate-stages.js';
import { textToKeep } from './plan-audit.js';
import { commits } from './relay-results.js';
import { SimpleQueryRelay } from './relay-simple-query.js';
import type { GateResult, StatementPlan } from './statement-plan.js';

/** The refusal of two-phase commit in a string pgwarden runs in stages. */
const TWO_PHASE: Refusal = {
  sqlstate: '0A000',
  message:
    'pgwarden cannot run two-phase commit in a string whose later statements use what earlier ones create',
  hint: 'Send PREPARE TRANSACTION, COMMIT PREPARED or ROLLBACK PREPARED as a Query of its own.',
};

/**
 * Runs a string whose later statements use what earlier ones create and that controls its
 * transaction itself in a shape that cannot run as one head and a rest (gate-stages.ts
 * blockAfterHead, which this replaces for such strings: `create table t(a int); insert into t values (1); commit` from idle,
 * `create table t(a int); savepoint s; insert into t …`, a ROLLBACK or `COMMIT; BEGIN` mid-string).
 * It keeps Postgres's state through the string: inside the string's implicit transaction block
 * (where pgwarden holds a BEGIN of its own open in its place) or an explicit block. Each piece
 * (a run of other statements, or one transaction-control statement) is decided when it is
 * reached, with the catalog read on this connection, and sent:
 * - other statements as they are, in the block that is open;
 * - in the implicit block, a transaction-control statement as gate-stages.ts implicitControl says,
 *   so that its warning or error is Postgres's own;
 * - in an explicit block, a transaction-control statement as it is (a COMMIT past the commit fence).
 * The client sees what a direct connection sends: each statement's replies, one ReadyForQuery at
 * the end. A statement refused rolls back what Postgres would roll back with it: the implicit
 * block (pgwarden's BEGIN), or leaves the explicit block failed (25P02 after), as an error there.
 */
export abstract class StringControlRelay extends SimpleQueryRelay {
  protected async controlled(sql: string, first: GateResult & { ok: true }, started: number): Promise<void> {
    // Postgres's block at this point of the string: its implicit one, or an explicit one.
    let implicit = this.status === 'I';
    // pgwarden's BEGIN is open upstream in place of the implicit block.
    let wrapped = false;
    let offset = 0;
    let r = first;
    const total = codePointLength(sql);
    const chunkEnds = this.afterControls(sql, total);
    const open = async (): Promise<boolean> => {
      if (wrapped) return true;
      wrapped = await this.internal('BEGIN');
      if (!wrapped) {
        this.batchOpen = false;
        this.refuseSimple({ sqlstate: '58000', message: 'pgwarden could not open the string transaction' });
      }
      return wrapped;
    };
    for (;;) {
      const plans = r.plans;
      const rest = offset > 0 ? blankCodePoints(sql, offset) : sql;
      const chunkEnd = offset === 0 ? total : (chunkEnds.find((e) => e > offset) ?? total);
      // Where the decided part ends: the chunk's end, or the statement gate-stages.ts cut before.
      const decidedEnd = r.rest === undefined ? chunkEnd : codePointLength(r.head ?? rest);
      const tc = plans.findIndex((p) => controlsTransaction(p.statement));
      if (plans.length === 0) break;
      let end: number;
      let piece: readonly StatementPlan[];
      let sent: string;
      let text: string;
      if (tc === 0) {
        end = plans[1]?.statement.location ?? decidedEnd;
        piece = plans.slice(0, 1);
        text = end >= total ? rest : sliceCodePoints(rest, 0, end);
        sent = text;
      } else if (tc < 0) {
        end = decidedEnd;
        piece = plans;
        text = end >= total ? rest : sliceCodePoints(rest, 0, end);
        sent = r.sent?.text ?? text;
      } else {
        end = plans[tc]?.statement.location ?? decidedEnd;
        text = sliceCodePoints(rest, 0, end);
        // The run before the transaction control alone, decided again for its own rewritten text.
        const run = await this.gateRest(text);
        if (!run.ok || run.rest !== undefined) {
          return this.refuseString(
            wrapped,
            run.ok ? { sqlstate: '0A000', message: 'pgwarden could not decide this string' } : run.refusal,
          );
        }
        piece = run.plans;
        sent = run.sent?.text ?? text;
      }
      const last = end >= total;
      const st = piece[0]?.statement;
      if (tc === 0 && st) {
        const control = implicit ? implicitControl(st) : undefined;
        if (control === 'refuse' || (!implicit && st.kind === 'MANAGE'))
          return this.refuseString(wrapped, TWO_PHASE);
        if (control === 'begin') {
          if (!(await open())) return;
          const { ran } = await this.piece(
            piece,
            text,
            text,
            started,
            { quietBegin: true },
            (ok) => ok && last,
          );
          // A BEGIN that failed in pgwarden's block fails Postgres's implicit one: all rolls back.
          if (!ran) return this.endFailed(false);
          implicit = false;
          wrapped = false;
        } else if (control !== undefined) {
          if (!(await open())) return;
          if (control === 'commit' && this.o.fence?.needed() && !(await this.o.fence.raise()))
            return this.fenceRefused();
          const own = control === 'commit' ? 'COMMIT;' : 'ROLLBACK;';
          wrapped = false;
          const { ran } = await this.piece(
            piece,
            text,
            own + text,
            started,
            { own: true },
            (ok) => !ok || last,
          );
          if (control === 'rollback' && !ran) this.o.gateSession.paths.completed([{ kind: 'rollback' }]);
          if (!ran) {
            this.batchOpen = false;
            return;
          }
        } else {
          if (piece.some(commits) && this.o.fence?.needed() && !(await this.o.fence.raise()))
            return this.fenceRefused();
          const { ran, status } = await this.piece(piece, text, text, started, {}, (ok) => !ok || last);
          if (!ran) {
            this.batchOpen = false;
            return;
          }
          implicit = status === 'I';
        }
      } else {
        if (implicit && !(await open())) return;
        const inImplicit = implicit;
        const { ran, status } = await this.piece(
          piece,
          text,
          sent,
          started,
          {},
          (ok) => !inImplicit && (!ok || last),
        );
        if (!ran) {
          if (inImplicit) return this.endFailed(false);
          this.batchOpen = false;
          return;
        }
        if (!inImplicit) implicit = status === 'I';
      }
      offset = end;
      if (last) break;
      // Decided up to the next transaction control only: what follows it is decided once it ran
      // (the search_path after a ROLLBACK TO is the session's then, search-path-tracker.ts).
      const nextEnd = chunkEnds.find((e) => e > offset) ?? total;
      const blanked = blankCodePoints(sql, offset);
      const next = await this.gateRest(nextEnd >= total ? blanked : sliceCodePoints(blanked, 0, nextEnd));
      if (!next.ok) return this.refuseString(wrapped, next.refusal);
      r = next;
    }
    if (implicit && wrapped) {
      // The commit fence: pgwarden's COMMIT of DDL goes once what waits on its locks is canceled.
      if (this.o.fence?.needed() && !(await this.o.fence.raise())) return this.fenceRefused();
      this.finish('COMMIT');
    }
    this.batchOpen = false;
  }

  /**
   * Where the string's transaction-control statements end (code-point offsets of the statements
   * after them; the string's length after the last one): its statements' places, from an analysis
   * under the session's last catalog (places depend on no catalog). Empty when none is loaded.
   */
  private afterControls(sql: string, total: number): number[] {
    const g = this.o.gateSession;
    const catalog = g.catalogNow() ?? g.catalogLast?.();
    if (!catalog) return [];
    try {
      const sts = this.o.cache.analyze(sql, { catalog, ...pathsFor(g, catalog) }).statements;
      return sts.flatMap((st, i) => (controlsTransaction(st) ? [sts[i + 1]?.location ?? total] : []));
    } catch {
      return [];
    }
  }

  /** A statement of the string refused: pgwarden's block (`wrapped`) rolled back, or the explicit block failed by the refusal. */
  private refuseString(wrapped: boolean, refusal: Refusal): Promise<void> | undefined {
    if (wrapped) return this.rollBackRefused(false, refusal);
    this.batchOpen = false;
    this.refuseSimple(refusal);
    return undefined;
  }

  /**
   * Sends one piece of the string (`plans`, the caller's `text`, `sent` upstream); resolves whether
   * all its statements completed and the status after it. Its ReadyForQuery goes on to the client
   * when `forward(ran)` says so (the string ends there).
   */
  private piece(
    plans: readonly StatementPlan[],
    text: string,
    sent: string,
    started: number,
    opts: { own?: boolean; quietBegin?: boolean },
    forward: (ran: boolean) => boolean,
  ): Promise<{ ran: boolean; status: 'I' | 'T' | 'E' }> {
    return new Promise((resolve) => {
      const e: Expect & { t: 'query' } = {
        t: 'query',
        plans,
        index: 0,
        sql: textToKeep(text, plans),
        started,
        ...(opts.own ? { own: true } : {}),
        ...(opts.quietBegin ? { quietBegin: true } : {}),
        held: (status) => {
          if (status === 'I') this.portals.clear();
          this.o.onTransactionStatus(status);
          const ran = e.index >= plans.length;
          resolve({ ran, status });
          return forward(ran);
        },
      };
      this.expects.push(e);
      this.send(encodeQuery(sent));
    });
  }
}

/** How many Unicode code points `text` has (the analysis's offsets count them). */
function codePointLength(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff) n++;
  }
  return n;
}

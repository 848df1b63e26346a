// The upstream's replies in the steady state: a chunk whose every message is one the queue expects plainly goes to the client as it came, read by headers only.
import { BackendCode } from '../wire/codes.js';
import { asciiCString, asciiCStringEnd } from '../wire/in-place.js';
import type { Expect } from './expected-replies.js';
import { UpstreamRepliesRelay } from './relay-upstream-replies.js';
import type { StatementPlan } from './statement-plan.js';

/** ReadyForQuery's status byte → the status ('I', 'T', 'E'); other bytes are malformed. */
function statusOf(b: number | undefined): 'I' | 'T' | 'E' | undefined {
  return b === 0x49 ? 'I' : b === 0x54 ? 'T' : b === 0x45 ? 'E' : undefined;
}

/** The plan a result message belongs to under `head` (an Execute's, or the Query's statement `index`), or false when `head` owes no result. */
function resultPlan(head: Expect, index: number): StatementPlan | null | false {
  if (head.t === 'execute') return head.plan;
  if (head.t === 'query') return head.plans[index] ?? null;
  return false;
}

/** A statement whose completion changes nothing but the audit and the counters (no session effect, no catalog change). */
function plainCompletion(plan: StatementPlan | null): boolean {
  return plan === null || (plan.effects.length === 0 && !plan.changesCatalog);
}

/**
 * The steady path of the replies (issue 18): pgbench's ParseComplete, BindComplete, RowDescription,
 * DataRow, CommandComplete and ReadyForQuery, one chunk per round trip. A chunk is first checked
 * whole, by message headers, against the queue of expected replies: every message complete, each
 * one its head expects, a RowDescription its plan accepted before, DataRows of a plan that masks
 * nothing on the wire, CommandCompletes of statements without session effects, ReadyForQuery ending
 * a Sync or a Query. Then the queue moves on, statements are audited as in the general path, and the
 * chunk is written to the client untouched: no Frame, no view, no copy. Any other chunk (an error, a
 * notice, a partial message, a masked row, a pgwarden-owned reply, anything held) is left whole to
 * the general path (fail closed: nothing is skipped that it would check).
 */
export abstract class SteadyRepliesRelay extends UpstreamRepliesRelay {
  /**
   * Handles `chunk` from the upstream on the steady path; false (nothing done) when it must take
   * the general path. The caller has checked that the upstream's memory hold is idle.
   */
  protected steadyReplies(chunk: Buffer): boolean {
    const framer = this.o.upstream.framer;
    if (this.discarding || this.closed || this.ignoringClient || framer.buffered !== 0 || framer.continuing)
      return false;
    if (!this.steadyRepliesKnown(chunk)) return false;
    const q = this.expects;
    const n = chunk.length;
    let at = 0;
    while (at < n) {
      const code = chunk[at] as number;
      const size = chunk.readInt32BE(at + 1) + 1;
      const head = q.first as Expect;
      switch (code) {
        case BackendCode.ParseComplete:
        case BackendCode.BindComplete:
        case BackendCode.NoData:
          q.shift();
          break;
        case BackendCode.RowDescription:
          if (head.t === 'describe') q.shift();
          break;
        case BackendCode.CommandComplete: {
          const tag = asciiCString(chunk, at + 5, at + size) as string;
          if (head.t === 'execute') {
            this.completed(head.plan, head.sql, head.started, tag);
            q.shift();
          } else if (head.t === 'query') {
            this.completed(head.plans[head.index] ?? null, head.sql, head.started, tag, head.sent);
            head.index++;
          }
          break;
        }
        case BackendCode.ReadyForQuery: {
          q.shift();
          this.discarding = false;
          const status = statusOf(chunk[at + 5]) as 'I' | 'T' | 'E';
          this.status = status;
          this.transactionReady(status);
          break;
        }
        default:
          break;
      }
      at += size;
    }
    this.o.client.write(chunk);
    this.pauseUpstreamWhileClientFull();
    return true;
  }

  /**
   * Whether every message of `chunk` is whole and is what the queue of expected replies, read from
   * its head on without changing it, takes plainly (see {@link SteadyRepliesRelay}).
   */
  private steadyRepliesKnown(chunk: Buffer): boolean {
    const q = this.expects;
    const n = chunk.length;
    let k = 0;
    let head = q.at(0);
    let index = head?.t === 'query' ? head.index : 0;
    let at = 0;
    while (at < n) {
      if (n - at < 5 || !head) return false;
      const code = chunk[at] as number;
      const size = chunk.readInt32BE(at + 1) + 1;
      if (size < 5 || size > n - at) return false;
      let next = false;
      switch (code) {
        case BackendCode.ParseComplete:
          if (head.t !== 'parse' || size !== 5) return false;
          next = true;
          break;
        case BackendCode.BindComplete:
          if (head.t !== 'bind' || size !== 5) return false;
          next = true;
          break;
        case BackendCode.NoData:
          if (head.t !== 'describe' || size !== 5) return false;
          next = true;
          break;
        case BackendCode.RowDescription: {
          const plan = head.t === 'describe' ? head.plan : resultPlan(head, index);
          if (plan === false || !this.rowDescriptionAsIs(plan, chunk, at + 5, at + size)) return false;
          next = head.t === 'describe';
          break;
        }
        case BackendCode.DataRow: {
          const plan = resultPlan(head, index);
          if (plan === false || (plan !== null && plan.mask.size > 0)) return false;
          break;
        }
        case BackendCode.CommandComplete: {
          const plan = resultPlan(head, index);
          if (plan === false || !plainCompletion(plan)) return false;
          // Its tag is read once, when the chunk is taken; here only checked (ASCII, one NUL, at its end).
          if (asciiCStringEnd(chunk, at + 5, at + size) !== at + size) return false;
          if (head.t === 'execute') next = true;
          else index++;
          break;
        }
        case BackendCode.ReadyForQuery:
          if (size !== 6 || statusOf(chunk[at + 5]) === undefined) return false;
          if (!((head.t === 'sync' && head.error === undefined) || (head.t === 'query' && !head.held)))
            return false;
          next = true;
          break;
        default:
          return false;
      }
      if (next) {
        head = q.at(++k);
        index = head?.t === 'query' ? head.index : 0;
      }
      at += size;
    }
    return true;
  }
}

// Client messages in the steady state: a statement the session's memo already decided, read where it lies in the chunk and sent as it came.

import { isReservedStatementName } from '../sql/reserved-statement-names.js';
import { FrontendCode } from '../wire/codes.js';
import { decodeParse } from '../wire/frontend.js';
import { asciiCString, asciiCStringEnd, bindWellFormed } from '../wire/in-place.js';
import type { Expect } from './expected-replies.js';
import { PROBE_STATEMENT } from './relay-core.js';
import { commits } from './relay-results.js';
import { SteadyRepliesRelay } from './relay-steady-replies.js';

/** Longest Parse message (bytes) whose decoded fields the steady path keeps for the next one. */
const KEPT_PARSE_BYTES = 4096;
/** Longest statement name (bytes) the steady path keeps decoded. */
const KEPT_NAME_BYTES = 256;

/** The expected reply of every Sync sent as it came (entries are never changed once queued). */
const SYNC: Expect = Object.freeze({ t: 'sync' });

/** A Parse message (a copy of its bytes) and what it decodes to. */
interface KeptParse {
  readonly bytes: Buffer;
  readonly name: string;
  readonly sql: string;
  readonly paramTypes: readonly number[];
}

/**
 * The steady path of the client's messages (issue 18): the messages pgbench and drivers repeat —
 * a Query, or Parse/Bind/Describe/Execute/Sync, or Bind/Describe/Execute/Sync of a prepared
 * statement — when the session is idle (nothing queued, nothing being decided, no partial message,
 * no large message held) and the policy in force is confirmed. Each message is read where it lies
 * in the chunk (texts and names only when ASCII, checked in place) and handled with the very steps
 * of the general path, minus its framing, queue and promises: a Query or Parse whose text the
 * session's gate memo holds for the state now (the same catalog, policy, roles, search paths:
 * gate-memo.ts) gets that decision; a Bind goes through when its prepared statement's decision
 * still holds (decidedStill); Describe and Execute of the unnamed portal, Sync and Flush are
 * queued and sent. Every other message, and the rest of the chunk from it on, takes the general
 * path: nothing is sent that was not decided, and nothing is decided here that the memo did not
 * hold. The messages taken go upstream as one write, the client's own bytes.
 */
export abstract class SteadyRequestsRelay extends SteadyRepliesRelay {
  private keptParse: KeptParse | undefined;
  private keptName = '';
  private keptNameBytes = Buffer.alloc(0);

  /**
   * Handles the whole messages at the head of `chunk` on the steady path while it can; returns the
   * offset it stopped at (0: nothing handled; chunk.length: all). The caller hands the rest to the
   * general path, and has checked that the client's memory hold is idle.
   */
  protected steadyRequests(chunk: Buffer): number {
    if (this.working || this.inbox.length > 0 || this.skipping || this.closed || this.framer.buffered !== 0)
      return 0;
    const n = chunk.length;
    let at = 0;
    this.coalescing = true;
    this.corkRuns = true;
    try {
      while (n - at >= 5) {
        const size = chunk.readInt32BE(at + 1) + 1;
        if (size < 5 || size > n - at || !this.steadyMessage(chunk, at, at + size)) break;
        at += size;
      }
    } finally {
      this.coalescing = false;
      this.flushSent();
      this.uncorkRuns();
    }
    const up = this.o.upstream.socket;
    if (at > 0 && up.writableNeedDrain) {
      this.o.client.pause();
      up.once('drain', () => !this.ignoringClient && this.o.client.resume());
    }
    return at;
  }

  /** One message `chunk[start, end)`; false (nothing done that the general path would not do again) when it must take the general path. */
  private steadyMessage(chunk: Buffer, start: number, end: number): boolean {
    switch (chunk[start]) {
      case FrontendCode.Query:
        return this.steadyQuery(chunk, start, end);
      case FrontendCode.Parse:
        return this.steadyParse(chunk, start, end);
      case FrontendCode.Bind:
        return this.steadyBind(chunk, start, end);
      case FrontendCode.Describe:
      case FrontendCode.Execute:
        return this.steadyUnnamedPortal(chunk, start, end);
      case FrontendCode.Sync:
        if (end - start !== 5) return false;
        // The Sync that commits an implicit transaction with DDL passes the commit fence: the general path.
        if (this.status === 'I' && this.o.fence && (this.o.fence.needed() || this.ddlInFlight()))
          return false;
        this.startBatch();
        this.batchOpen = false;
        this.expects.push(SYNC);
        this.sendRange(chunk, start, end);
        return true;
      case FrontendCode.Flush:
        if (end - start !== 5) return false;
        this.sendRange(chunk, start, end);
        return true;
      default:
        return false;
    }
  }

  /** A Query whose text the memo holds: simpleQuery, then queryAllowed, as the general path runs them. */
  private steadyQuery(chunk: Buffer, start: number, end: number): boolean {
    const sql = asciiCString(chunk, start + 5, end);
    if (sql === undefined) return false;
    this.startBatch();
    // Postgres drops the unnamed prepared statement at every Query (exec_simple_query).
    this.statements.delete('');
    const started = performance.now();
    const result = this.gateMemoized(sql);
    // A string run in stages or in parts (a COMMIT in it) waits for replies: the general path.
    // Memoized results are neither (GateMemo.keep: no effect); this holds whatever it keeps.
    if (!result || result.rest !== undefined || result.plans.some((p) => p.effects.length > 0 || commits(p)))
      return false;
    if (this.queryAllowed({ bytes: chunk, start, end, sql, started }, result) !== undefined)
      throw new Error('a Query on the steady path waits for its replies');
    return true;
  }

  /** A Parse whose text the memo holds: parseAllowed, as the general path runs it. */
  private steadyParse(chunk: Buffer, start: number, end: number): boolean {
    let p = this.keptParse;
    if (!p || p.bytes.length !== end - start || p.bytes.compare(chunk, start, end) !== 0) {
      if (end - start > KEPT_PARSE_BYTES) return false;
      const bytes = Buffer.from(chunk.subarray(start, end));
      let decoded: { name: string; sql: string; paramTypes: number[] };
      try {
        decoded = decodeParse(bytes.subarray(5));
      } catch {
        return false;
      }
      p = { bytes, ...decoded };
      this.keptParse = p;
    }
    this.startBatch();
    if (p.name === PROBE_STATEMENT || isReservedStatementName(p.name)) return false;
    const result = this.gateMemoized(p.sql);
    if (!result) return false;
    this.parseAllowed(
      { bytes: chunk, start, end, name: p.name, sql: p.sql, paramTypes: p.paramTypes },
      result,
    );
    return true;
  }

  /** A well-formed Bind to a prepared statement whose decision still holds: bound, as the general path runs it. */
  private steadyBind(chunk: Buffer, start: number, end: number): boolean {
    const portalEnd = asciiCStringEnd(chunk, start + 5, end);
    if (portalEnd < 0) return false;
    const nameEnd = asciiCStringEnd(chunk, portalEnd, end);
    if (nameEnd < 0 || !bindWellFormed(chunk, nameEnd, end)) return false;
    const statement = this.steadyName(chunk, portalEnd, nameEnd - 1);
    if (statement === undefined) return false;
    this.startBatch();
    const entry = this.statements.get(statement);
    if (!entry || !this.decidedStill(entry)) return false;
    const portal = portalEnd === start + 6 ? '' : chunk.toString('latin1', start + 5, portalEnd - 1);
    this.bound(chunk, start, end, portal, entry, statement);
    return true;
  }

  /** The statement name `chunk[start, end)` (ASCII), decoded once while it repeats; undefined when too long to keep. */
  private steadyName(chunk: Buffer, start: number, end: number): string | undefined {
    if (start === end) return '';
    const kept = this.keptNameBytes;
    if (kept.length === end - start && kept.compare(chunk, start, end) === 0) return this.keptName;
    if (end - start > KEPT_NAME_BYTES) return undefined;
    this.keptNameBytes = Buffer.from(chunk.subarray(start, end));
    this.keptName = chunk.toString('latin1', start, end);
    return this.keptName;
  }

  /**
   * Describe or Execute of the unnamed portal (`D` 'P' "" or `E` "" with its row limit), bound by a
   * protocol Bind (not a SQL cursor): queued and sent, as describePortal and sendExecute do.
   */
  private steadyUnnamedPortal(chunk: Buffer, start: number, end: number): boolean {
    const describe = chunk[start] === FrontendCode.Describe;
    if (
      describe
        ? end - start !== 7 || chunk[start + 5] !== 0x50 || chunk[start + 6] !== 0
        : end - start !== 10 || chunk[start + 5] !== 0
    )
      return false;
    this.startBatch();
    if (this.o.gateSession.names.cursors.has('')) return false;
    const portal = this.portals.get('');
    if (!portal || this.boundUnderOtherPolicy(portal)) return false;
    if (describe) this.sendDescribe(chunk, start, end, portal.plan);
    else {
      // A statement that may change the catalog waits for a grant sync at Execute, and a COMMIT
      // may pass the commit fence (a prepared COMMIT bound again): the general path.
      if (portal.plan && (portal.plan.changesCatalog || commits(portal.plan))) return false;
      this.sendExecute(chunk, start, end, portal);
    }
    return true;
  }
}

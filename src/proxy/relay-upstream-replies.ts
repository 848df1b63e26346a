// Upstream replies to the client: matched to the queue of expected replies, ReadyForQuery tracked, errors redacted.
import { seesEverything } from '../policy/hidden-columns.js';
import { decodeParameterStatus, decodeReadyForQuery } from '../wire/backend.js';
import { BackendCode } from '../wire/codes.js';
import { decodeErrorResponse, errorResponse, noticeResponse } from '../wire/error-fields.js';
import type { Frame, MessageFramer } from '../wire/framer.js';
import { FENCE_CANCEL_MESSAGE, FENCE_CANCEL_SQLSTATE } from './commit-fence.js';
import {
  raisedByCode,
  redactError,
  redactRaised,
  secondWallRefusal,
  unrewriteError,
} from './error-redaction.js';
import type { Expect, MapUndo } from './expected-replies.js';
import { LARGE_MESSAGE_BYTES } from './memory-budget.js';
import { ExtendedExecuteRelay } from './relay-extended-execute.js';
import type { StatementPlan } from './statement-plan.js';

/**
 * Upstream → client: each backend message goes to the head of the expected-replies queue; probe
 * errors become ours, other errors are redacted where the caller does not see everything, and
 * unchanged neighbours leave as one write.
 */
export abstract class UpstreamRepliesRelay extends ExtendedExecuteRelay {
  /**
   * What goes to the client for the upstream bytes being handled: finished runs, and the run being
   * extended (unchanged neighbours contiguous in one chunk, tracked by offsets: one view of the
   * chunk, not one per message).
   */
  private readonly out: Buffer[] = [];
  private outRun: Buffer | undefined;
  private outRunEnd = 0;

  /** Handles upstream messages already cut (those that arrived with the end of the start-up). */
  protected fromUpstreamFrames(frames: readonly Frame[]): void {
    for (const f of frames) {
      const b = this.onUpstream(f);
      if (b !== null) this.emit(b);
    }
    this.flushOut();
  }

  /**
   * Handles every message `framer` holds after a feed, in order. While the head of the queue
   * passes DataRows as they came (nothing masked on the wire, nothing discarded), a run of them
   * is taken as one byte range of the chunk: no Frame, no view, no check per row, one write
   * (issue 18); a row split across chunks is passed on in parts, not assembled first, unless it is
   * large enough for the memory budget to hold it (memory-budget.ts LARGE_MESSAGE_BYTES). Throws the framer's ProtocolError; nothing of this call's output is written then.
   */
  protected fromUpstreamFramer(framer: MessageFramer): void {
    try {
      for (;;) {
        // A row passed on in part goes on whole: it was decided when its header came.
        if (framer.continuing || this.rowsAsIs()) {
          const run = framer.takeRun(BackendCode.DataRow, LARGE_MESSAGE_BYTES);
          if (run) {
            this.emit(run);
            continue;
          }
        }
        const f = framer.shift();
        if (!f) break;
        const b = this.onUpstream(f);
        if (b !== null) this.emit(b);
      }
    } catch (e) {
      this.out.length = 0;
      this.outRun = undefined;
      throw e;
    }
    this.flushOut();
  }

  /**
   * True when a DataRow arriving now would go to the client exactly as it came: the head of the
   * queue is a statement's result whose plan masks nothing on the wire (unrestricted, or masked
   * at read by the upstream), and no reply is being discarded. What {@link onUpstream} does with
   * a DataRow then is return its bytes.
   */
  private rowsAsIs(): boolean {
    if (this.discarding) return false;
    const head = this.expects.first;
    if (head?.t === 'execute') return head.plan === null || head.plan.mask.size === 0;
    if (head?.t === 'query') {
      const plan = head.plans[head.index];
      return plan === undefined || plan.mask.size === 0;
    }
    return false;
  }

  private emit(b: Buffer): void {
    const run = this.outRun;
    if (run && b.buffer === run.buffer && b.byteOffset === this.outRunEnd) {
      this.outRunEnd += b.length;
      return;
    }
    if (run) this.out.push(viewOf(run, this.outRunEnd));
    this.outRun = b;
    this.outRunEnd = b.byteOffset + b.length;
  }

  /** Writes what {@link emit} gathered: one write, or one corked batch of a few. */
  private flushOut(): void {
    const run = this.outRun;
    if (!run) return;
    this.outRun = undefined;
    const out = this.out;
    const client = this.o.client;
    if (out.length === 0) client.write(viewOf(run, this.outRunEnd));
    else {
      out.push(viewOf(run, this.outRunEnd));
      // Runs are few: the chunk's unchanged messages, and masked rows side by side in scratch memory.
      if (out.length > 8) client.write(Buffer.concat(out));
      else {
        client.cork();
        for (const b of out) client.write(b);
        client.uncork();
      }
      out.length = 0;
    }
    this.pauseUpstreamWhileClientFull();
  }

  /** Stops reading the upstream while the client's socket asks for a drain (it reads slower than the server sends). */
  protected pauseUpstreamWhileClientFull(): void {
    const client = this.o.client;
    if (client.writableNeedDrain) {
      this.o.upstream.socket.pause();
      client.once('drain', () => this.o.upstream.socket.resume());
    }
  }

  /** The bytes to send the client for one upstream message (null: nothing). */
  /** The statement canceled at the session's end answered 57014: its ReadyForQuery is not the client's either. */
  private canceledAtEnd = false;

  private onUpstream(f: Frame): Buffer | null {
    if (this.internalReply(f)) return null;
    switch (f.code) {
      case BackendCode.NoticeResponse:
        if (this.discarding || this.quietNotice(f)) return null;
        return this.notice(f);
      case BackendCode.NotificationResponse:
        return this.discarding ? null : f.bytes;
      case BackendCode.ParameterStatus:
        return this.parameterStatus(f);
      case BackendCode.ReadyForQuery: {
        const out = this.readyForQuery(f);
        if (!this.canceledAtEnd) return out;
        this.canceledAtEnd = false;
        return null;
      }
      case BackendCode.ErrorResponse: {
        const out = this.error(f);
        // The session is ending (shutdown, KILL) and this is the cancel pgwarden sent: Postgres
        // sends only its FATAL 57P01 then, whose DETAIL says the statement was canceled.
        if (!this.ignoringClient || this.lastErrorCode !== '57014') return out;
        this.canceledAtEnd = true;
        return null;
      }
      default:
        break;
    }
    const head = this.expects.first;
    if (!head) return f.bytes;
    const discarding = this.discarding;
    const out = this.reply(head, f);
    // The message that starts discarding (the refusal in place of a RowDescription) still goes out.
    return discarding ? null : out;
  }

  private parameterStatus(f: Frame): Buffer {
    const p = decodeParameterStatus(f.payload);
    const name = p.name.toLowerCase();
    if (
      (name === 'client_encoding' && p.value.toUpperCase() !== 'UTF8') ||
      (name === 'standard_conforming_strings' && p.value !== 'on')
    ) {
      // The parser would read the text differently from the server from now on (DESIGN.md).
      this.o.terminate({
        severity: 'FATAL',
        code: '42501',
        message: `${p.name} changed to ${p.value}: pgwarden reads SQL as UTF8 with standard_conforming_strings on and closes the session`,
      });
    }
    return f.bytes;
  }

  private readyForQuery(f: Frame): Buffer | null {
    // Everything owed before this ReadyForQuery has been answered or skipped; what a skipped
    // message would have created or closed never happened upstream, so it is put back.
    // Allocated only when a message was skipped (the common ReadyForQuery ends a batch answered whole).
    let undos: MapUndo[] | undefined;
    let ended: Expect | undefined;
    let error: Buffer | undefined;
    while (this.expects.length > 0) {
      const e = this.expects.shift() as Expect;
      if (e.t === 'sync') error = e.error;
      if (e.t === 'sync' || e.t === 'query' || e.t === 'finish' || (e.t === 'probe' && e.untilReady)) {
        ended = e;
        break;
      }
      if ('undo' in e) {
        undos ??= [];
        undos.push(e.undo);
      }
    }
    if (undos) for (const undo of undos.reverse()) undo.run();
    this.discarding = false;
    this.status = decodeReadyForQuery(f.payload);
    // A stage of a string pgwarden runs in its own transaction: the client sees one ReadyForQuery, at the end.
    if (ended?.t === 'query' && ended.held) {
      if (this.status === 'I') this.transactionsEnded++;
      this.o.gateSession.paths.ready(this.status);
      return ended.held(this.status) ? f.bytes : null;
    }
    this.transactionReady(this.status);
    return error ? Buffer.concat([error, f.bytes]) : f.bytes;
  }

  /** What a ReadyForQuery with `status` that goes to the client changes: portals, the path, the session's status. */
  protected transactionReady(status: 'I' | 'T' | 'E'): void {
    // Portals end with their transaction (holdable SQL cursors are tracked as cursors, not here).
    if (status === 'I') {
      this.portals.clear();
      this.transactionsEnded++;
    }
    this.o.gateSession.paths.ready(status);
    this.o.onTransactionStatus(status);
  }

  /** An upstream ErrorResponse: ours instead for a probe, redacted where the statement touches hidden columns. */
  private error(f: Frame): Buffer | null {
    const head = this.expects.first;
    this.lastErrorCode = decodeErrorResponse(f.payload).code;
    this.o.gateSession.paths.statementFailed();
    if (head?.t === 'probe') {
      if (!head.untilReady) this.expects.shift();
      return this.discarding ? null : head.error;
    }
    let plan: StatementPlan | null = null;
    if (head?.t === 'query') plan = head.plans[head.index] ?? null;
    else if (head && 'plan' in head) plan = head.plan;
    else if (head?.t === 'parse') plan = head.entry.plan;
    if (head && head.t !== 'query' && head.t !== 'sync' && head.t !== 'finish') {
      // Extended protocol: the upstream skips to Sync; so do the replies we were owed, and what
      // the failed and skipped messages would have created or closed is put back.
      const undos: MapUndo[] = [];
      while (this.expects.length > 0 && this.expects.first?.t !== 'sync') {
        const e = this.expects.shift() as Expect;
        if ('undo' in e) undos.push(e.undo);
      }
      for (const undo of undos.reverse()) undo.run();
      // Postgres now ignores every message until Sync. Messages the client sends from here on
      // (it may have seen the error after a Flush) are dropped here too, unless its Sync has
      // already gone up: only then does the upstream process what follows.
      if (!this.expects.some((e) => e.t === 'sync')) this.skipping = true;
    }
    if (this.discarding) return null;
    let redact = plan?.redact || (head?.t === 'query' && head.plans.some((p) => p.redact));
    let fields = decodeErrorResponse(f.payload);
    // The commit fence canceled this statement (commit-fence.ts): say so, and that it may be retried.
    if (this.fenceCanceled && fields.code === '57014') {
      this.fenceCanceled = false;
      return errorResponse({ severity: 'ERROR', code: FENCE_CANCEL_SQLSTATE, message: FENCE_CANCEL_MESSAGE });
    }
    if (this.o.secondWall && fields.code === '42501' && fields.message.startsWith('permission denied'))
      return errorResponse(secondWallRefusal(fields));
    const sent = plan?.sent ?? (head?.t === 'query' ? head.plans.find((p) => p.sent)?.sent : undefined);
    // Mask at read: the error is about the text pgwarden sent; tell it about the caller's.
    if (sent) fields = unrewriteError(fields, sent.positions, sent.names);
    const fatal = fields.severity === 'FATAL' || fields.severity === 'PANIC';
    // Code inside the statement (a trigger, a function, RAISE) may print the row it runs on.
    if (!fatal && raisedByCode(fields) && !this.seesEverything()) return errorResponse(redactRaised(fields));
    // A constraint failure or data exception may come from another table than the statement
    // names (a cascade, a trigger): its DETAIL or MESSAGE prints that row or value. A caller who
    // does not see everything gets neither, whatever the statement.
    if (!redact && (fields.code.startsWith('23') || fields.code.startsWith('22'))) {
      redact = !this.seesEverything();
    }
    if (!redact) return sent ? errorResponse(fields) : f.bytes;
    if (fatal) return f.bytes;
    return errorResponse(redactError(fields));
  }

  /** Whether the session's roles see every column of its database (nothing to redact for them). */
  protected seesEverything(): boolean {
    const g = this.o.gateSession;
    return seesEverything(g.config, g.roles, g.database);
  }

  /**
   * Whether `f` is the 25001 warning ("there is already a transaction in progress") of a string's
   * own BEGIN that pgwarden sends inside the block it opened for the string in place of
   * Postgres's implicit one, where Postgres gives none (relay-string-control.ts).
   */
  private quietNotice(f: Frame): boolean {
    const head = this.expects.first;
    if (head?.t !== 'query' || !head.quietBegin) return false;
    return decodeErrorResponse(f.payload).code === '25001';
  }

  /**
   * A NoticeResponse: as is, unless code inside the statement raised it (a trigger's `RAISE
   * NOTICE '%', OLD` prints the row) and the caller does not see everything: then redacted.
   */
  private notice(f: Frame): Buffer {
    const fields = decodeErrorResponse(f.payload);
    if (!raisedByCode(fields) || this.seesEverything()) return f.bytes;
    return noticeResponse(redactRaised(fields));
  }

  /** Replies that belong to the head of the queue. */
  private reply(head: Expect, f: Frame): Buffer | null {
    switch (head.t) {
      case 'query':
        return this.queryReply(head, f);
      case 'parse':
        if (f.code === BackendCode.ParseComplete) this.expects.shift();
        return f.bytes;
      case 'reparse':
        if (f.code !== BackendCode.ParseComplete) return f.bytes;
        this.expects.shift();
        return null;
      case 'bind':
        if (f.code === BackendCode.BindComplete) this.expects.shift();
        return f.bytes;
      case 'describe':
        if (f.code === BackendCode.RowDescription) {
          this.expects.shift();
          return this.rowDescription(head.plan, f);
        }
        if (f.code === BackendCode.NoData) this.expects.shift();
        return f.bytes;
      case 'execute':
        return this.executeReply(head, f);
      case 'close':
        if (f.code === BackendCode.CloseComplete) this.expects.shift();
        return f.bytes;
      case 'finish':
        return f.code === BackendCode.CommandComplete ? null : f.bytes;
      default:
        return f.bytes;
    }
  }
}

/** `run` extended to `end` (a byte offset in its ArrayBuffer): itself when it ends there. */
function viewOf(run: Buffer, end: number): Buffer {
  const length = end - run.byteOffset;
  return length === run.length ? run : Buffer.from(run.buffer, run.byteOffset, length);
}

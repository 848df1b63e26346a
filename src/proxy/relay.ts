// The relay after start-up: every client message decided before it is sent, every reply checked and masked.

import { FrontendCode } from '../wire/codes.js';
import { errorResponse } from '../wire/error-fields.js';
import type { Frame } from '../wire/framer.js';
import { decodeEmpty } from '../wire/frontend.js';
import { sync } from '../wire/frontend-encode.js';
import { ProtocolError } from '../wire/protocol-error.js';
import { HELD_COPIES, PLAIN_COPIES, STALLED_HOLD_MS } from './memory-budget.js';
import { MessageHold } from './message-hold.js';
import { SteadyRequestsRelay } from './relay-steady-requests.js';

const EMPTY = Buffer.alloc(0);

export type { RelayOptions } from './relay-options.js';

/**
 * Enforcement on the wire (DESIGN.md "On the wire", issue 5): Simple Query and the extended
 * protocol are decided before anything is sent; refusals become ErrorResponse with the upstream's
 * transaction failed the same way; replies are masked, checked against the predicted origins, and
 * errors redacted; SQL-level and protocol-level prepared statements, portals and cursors carry
 * their plans. Original bytes are forwarded where nothing changes.
 */
export class Relay extends SteadyRequestsRelay {
  /**
   * The memory budget this session holds for large messages from each side (issue 16 item 2). When
   * other sessions wait for the budget while this one's client neither reads what is held for it
   * nor sends the rest of a message it announced, the budget ends this session (memory-budget.ts).
   */
  private readonly clientHold = new MessageHold(this.o.memory, this.o.client, () => this.stalled(), {
    onWaitTimeout: (size, waitedMs) => this.clientWaitedOut(size, waitedMs),
    // A client that sees everything is never rewritten: its messages go upstream as they came.
    copies: () => (this.seesEverything() ? PLAIN_COPIES : HELD_COPIES),
    // A statement sent whole and waiting for the gate or the upstream is pgwarden's wait, unless
    // the client leaves unread what was written to it (a pipeline whose replies it never reads).
    peerAtFault: () => this.o.client.writableNeedDrain,
  });
  private readonly upstreamHold = new MessageHold(
    this.o.memory,
    this.o.upstream.socket,
    () => this.stalled(),
    {
      onWaitTimeout: (size, waitedMs) =>
        this.upstreamOutOfMemory(
          size,
          `waited ${waitedMs} ms for`,
          'upstream message waited out the memory budget',
        ),
    },
  );

  /**
   * Evicted by the memory budget: FATAL 53200, and both sockets destroyed at once, so that what was
   * buffered for a client that does not read is freed with the budget it held (a graceful end
   * would keep it until written).
   */
  private stalled(): void {
    this.o.log.warn(
      { event: 'memory-budget-stalled' },
      'session ended: it held memory budget others wait for, and its client made no progress at pace',
    );
    this.o.terminate({
      severity: 'FATAL',
      code: '53200',
      message: `out of memory: this session held part of pgwarden's memory budget (limits.memory_budget_bytes) that other sessions wait for, and for ${STALLED_HOLD_MS / 1000} s its client has not read or sent it at the pace that would finish it within limits.memory_wait_ms`,
    });
    this.o.client.destroy();
    this.o.upstream.socket.destroy();
  }
  /** Client messages that hold budget, with the bytes (given back once handled and sent upstream). */
  private readonly held = new WeakMap<Frame, number>();
  /** Stand-ins for client messages refused for the budget, with their 53200 messages. */
  private readonly tooLarge = new WeakMap<Frame, string>();

  override stop(): void {
    super.stop();
    this.clientHold.close();
    this.upstreamHold.close();
  }

  /** Starts relaying both ways. */
  start(): void {
    const { client, upstream } = this.o;
    client.on('data', (chunk: Buffer) => this.fromClient(chunk));
    for (const f of upstream.pending) this.fromUpstreamFrames([f]);
    upstream.socket.on('data', (chunk: Buffer) => {
      // The steady state: replies the queue expects plainly go on as they came (relay-steady-replies.ts).
      if (this.upstreamHold.idle && this.steadyReplies(chunk)) return;
      try {
        upstream.framer.feed(chunk);
        this.fromUpstreamFramer(upstream.framer);
      } catch (e) {
        if (!(e instanceof ProtocolError)) throw e;
        this.o.log.error(
          { event: 'upstream-protocol', message: (e as Error).message },
          'malformed message from upstream',
        );
        this.o.terminate({
          severity: 'FATAL',
          code: '08P01',
          message: 'lost synchronization with the upstream server',
        });
        return;
      }
      // Budget: what this chunk completed was written to the client (given back once it drains);
      // a large message now arriving waits for its share, the upstream unread meanwhile.
      const hold = this.upstreamHold;
      hold.releaseAfterDrain(hold.completed(upstream.framer), client);
      if (hold.arrive(upstream.framer) === 'too-large') {
        this.upstreamOutOfMemory(
          upstream.framer.pendingMessageBytes,
          'does not fit in',
          'upstream message over the memory budget',
        );
      }
    });
    upstream.socket.resume();
  }

  /** A message from the upstream that cannot be held (`how`: why): the session ends, FATAL 53200. */
  private upstreamOutOfMemory(size: number, how: string, logged: string): void {
    this.o.log.warn({ event: 'memory-budget', size, from: 'upstream' }, logged);
    this.o.terminate({
      severity: 'FATAL',
      code: '53200',
      message: `out of memory: a message of ${size} bytes from the server ${how} pgwarden's memory budget of ${this.o.memory?.limit} bytes (limits.memory_budget_bytes)`,
    });
  }

  /**
   * A client message waited longer than limits.memory_wait_ms for budget: it is given up (its bytes
   * dropped as they arrive) and answered 53200 in its turn, that message only; the session goes on.
   */
  private clientWaitedOut(size: number, waitedMs: number): void {
    if (this.closed) return;
    this.o.log.info(
      { event: 'memory-budget', size, from: 'client', waitedMs },
      'client message waited out the memory budget',
    );
    const stand: Frame = { code: this.framer.skipPending(), bytes: EMPTY, payload: EMPTY };
    this.tooLarge.set(
      stand,
      `out of memory: a message of ${size} bytes waited ${waitedMs} ms for pgwarden's memory budget of ${this.o.memory?.limit} bytes (limits.memory_budget_bytes, limits.memory_wait_ms)`,
    );
    this.inbox.push(stand);
    if (!this.ignoringClient) this.o.client.resume();
    if (!this.working) void this.drain();
  }

  // ---------------------------------------------------------------------------------------------
  // Client → upstream
  // ---------------------------------------------------------------------------------------------

  /** Client bytes that arrived while another session's commit fence held this one (commit-fence.ts). */
  private fenced: Buffer[] | undefined;

  private fromClient(chunk: Buffer): void {
    if (this.ignoringClient) return;
    if (this.fenced) {
      this.fenced.push(chunk);
      return;
    }
    // Another session's COMMIT of DDL is being fenced: this one's messages wait, unread, until
    // its ReadyForQuery has published the change (then they are decided under the new catalog).
    const held = this.o.fence?.held();
    if (held) {
      this.fenced = [chunk];
      this.o.client.pause();
      void held.then(() => {
        const chunks = this.fenced ?? [];
        this.fenced = undefined;
        if (!this.ignoringClient) this.o.client.resume();
        for (const c of chunks) this.fromClient(c);
      });
      return;
    }
    // The steady state: statements the session's memo decided go up as they came (relay-steady-requests.ts).
    if (this.clientHold.idle) {
      let at: number;
      try {
        at = this.steadyRequests(chunk);
      } catch (e) {
        this.failed(e);
        return;
      }
      if (at === chunk.length) return;
      if (at > 0) chunk = chunk.subarray(at);
    }
    let frames: Frame[];
    try {
      frames = this.framer.push(chunk);
    } catch (e) {
      const err = e as ProtocolError;
      this.o.log.warn({ event: 'protocol-violation', message: err.message }, 'malformed message from client');
      this.o.terminate({ severity: 'FATAL', code: err.sqlstate ?? '08P01', message: err.message });
      return;
    }
    const done = this.clientHold.completed(this.framer);
    if (done > 0 && frames[0]) this.held.set(frames[0], done);
    if (this.clientHold.arrive(this.framer) === 'too-large') {
      // Never buffered: its bytes are dropped as they arrive, and it is answered in its turn.
      const size = this.framer.pendingMessageBytes;
      const stand: Frame = { code: this.framer.skipPending(), bytes: EMPTY, payload: EMPTY };
      this.tooLarge.set(
        stand,
        `out of memory: a message of ${size} bytes does not fit in pgwarden's memory budget of ${this.o.memory?.limit} bytes (limits.memory_budget_bytes)`,
      );
      frames.push(stand);
    }
    this.inbox.pushAll(frames);
    if (!this.working) void this.drain();
  }

  /** Handles queued client messages one at a time, in order; pauses the client while deciding. */
  private async drain(): Promise<void> {
    this.working = true;
    const up = this.o.upstream.socket;
    // One cork for the whole batch: Parse/Bind/Execute/Sync decided without waiting leave as one
    // write, and as one view of the client's bytes where they go up as they came (send()).
    up.cork();
    this.coalescing = true;
    try {
      while (this.inbox.length > 0 && !this.closed) {
        const frame = this.inbox.shift() as Frame;
        let pending: Promise<void> | undefined;
        try {
          // Messages queued before another session's commit fence went up wait for it too.
          const held = this.o.fence?.held();
          pending = held ? held.then(() => this.afterFence(frame)) : this.handleClient(frame);
        } catch (e) {
          if (!(e instanceof ProtocolError)) throw e;
          this.malformed(frame, e);
        }
        if (pending) {
          // A catalog read (possibly on this very upstream connection) must not wait behind the cork.
          this.coalescing = false;
          this.flushSent();
          up.uncork();
          this.o.client.pause();
          await pending;
          if (!this.ignoringClient) this.o.client.resume();
          up.cork();
          this.coalescing = true;
        }
        const held = this.held.get(frame);
        if (held !== undefined) this.clientHold.releaseAfterDrain(held, up);
      }
    } catch (e) {
      this.failed(e);
    } finally {
      this.coalescing = false;
      this.flushSent();
      up.uncork();
      this.working = false;
    }
    if (up.writableNeedDrain) {
      this.o.client.pause();
      up.once('drain', () => !this.ignoringClient && this.o.client.resume());
    }
  }

  /** handleClient of a message that waited for a commit fence (a malformed one answered as in drain). */
  private afterFence(frame: Frame): Promise<void> | undefined {
    try {
      return this.handleClient(frame);
    } catch (e) {
      if (!(e instanceof ProtocolError)) throw e;
      this.malformed(frame, e);
      return undefined;
    }
  }

  /** An error of pgwarden's own while handling client messages: logged, and the session ends (FATAL XX000). */
  private failed(e: unknown): void {
    this.o.log.error({ event: 'relay-error', err: (e as Error).stack }, 'relay failed');
    this.o.terminate({ severity: 'FATAL', code: 'XX000', message: 'pgwarden internal error' });
  }

  /**
   * A message that does not decode (issue 16 item 4), answered as PostgreSQL answers it: ERROR with
   * the decoder's SQLSTATE (08P01 protocol_violation, 22021 for text that is not UTF-8) at that
   * message, and the session goes on. The upstream's transaction fails the same way (a refusal
   * probe): a Query gets its ReadyForQuery, an extended-protocol message (Sync and Flush with a
   * payload included, as Postgres reads them in extended mode) skips to the next Sync. Nothing of
   * the message is forwarded.
   */
  private malformed(f: Frame, e: ProtocolError): void {
    this.o.log.info(
      { event: 'malformed-message', type: String.fromCharCode(f.code), code: e.sqlstate, reason: e.message },
      'malformed message from client',
    );
    const refusal = { sqlstate: e.sqlstate, message: e.message };
    if (f.code === FrontendCode.Sync) {
      // Postgres ends any skip at a Sync before reading it (SocketBackend), then fails on its
      // payload: ERROR and ReadyForQuery, the implicit transaction aborted, nothing committed.
      const error = errorResponse({ severity: 'ERROR', code: e.sqlstate, message: e.message });
      if (this.skipping) {
        // The upstream's transaction already failed with the error that began the skip.
        this.skipping = false;
        this.startBatch();
        this.batchOpen = false;
        this.expects.push({ t: 'sync', error });
        this.send(sync());
        return;
      }
      this.startBatch();
      this.refuseSimple(refusal);
      this.batchOpen = false;
      this.extendedOpen = false;
      return;
    }
    // While skipping to Sync, Postgres reads no other message at all.
    if (this.skipping) return;
    this.startBatch();
    if (f.code === FrontendCode.Query) this.refuseSimple(refusal);
    else this.refuseExtended(refusal);
  }

  /** One client message; returns a promise when it must wait for a decision. Throws ProtocolError for a malformed one. */
  private handleClient(f: Frame): Promise<void> | undefined {
    const outOfMemory = this.tooLarge.get(f);
    if (outOfMemory !== undefined) throw new ProtocolError(outOfMemory, '53200');
    switch (f.code) {
      case FrontendCode.Query:
        if (this.skipping) return undefined;
        return this.simpleQuery(f);
      case FrontendCode.Parse:
        if (this.skipping) return undefined;
        return this.parse(f);
      case FrontendCode.Bind:
        if (this.skipping) return undefined;
        return this.bind(f);
      case FrontendCode.Describe:
        return this.skipping ? undefined : this.describe(f);
      case FrontendCode.Execute:
        return this.skipping ? undefined : this.execute(f);
      case FrontendCode.Close:
        if (!this.skipping) this.close(f);
        return undefined;
      case FrontendCode.Sync:
        decodeEmpty(f.payload, 'Sync');
        // The Sync that commits an implicit transaction with DDL passes the commit fence first.
        if (
          this.o.fence &&
          this.status === 'I' &&
          !this.skipping &&
          (this.o.fence.needed() || this.ddlInFlight())
        )
          return this.fencedSync(f);
        this.sendSync(f);
        return undefined;
      case FrontendCode.Flush:
        decodeEmpty(f.payload, 'Flush');
        this.send(f.bytes);
        return undefined;
      case FrontendCode.CopyData:
      case FrontendCode.CopyDone:
      case FrontendCode.CopyFail:
        this.send(f.bytes);
        return undefined;
      case FrontendCode.FunctionCall:
        if (this.skipping) return undefined;
        this.startBatch();
        this.refuseSimple({
          sqlstate: '42501',
          message: 'the fast-path function call interface is not allowed through pgwarden',
        });
        return undefined;
      case FrontendCode.Terminate:
        this.flushSent();
        this.o.upstream.socket.end(f.bytes);
        this.o.terminate();
        return undefined;
      default:
        this.o.terminate({
          severity: 'FATAL',
          code: '08P01',
          message: `invalid frontend message type ${f.code}`,
        });
        return undefined;
    }
  }
}

// The extended-protocol flow from Execute: Execute, Sync and Close, a portal decided again after a reload, the commit fence at Execute and Sync.
import type { Refusal } from '../policy/decision-types.js';
import { isReservedStatementName, reservedStatementRefusal } from '../sql/reserved-statement-names.js';
import { decodeCommandComplete } from '../wire/backend.js';
import { BackendCode } from '../wire/codes.js';
import type { Frame } from '../wire/framer.js';
import { decodeClose, decodeExecute } from '../wire/frontend.js';
import { flush } from '../wire/frontend-encode.js';
import { FENCE_CANCEL_SQLSTATE, FENCE_TIMEOUT_MESSAGE } from './commit-fence.js';
import { type Expect, MapUndo, type PortalEntry, type PreparedEntry } from './expected-replies.js';
import { ExtendedProtocolRelay } from './relay-extended-protocol.js';
import { commits, PREPARED_DDL_REFUSAL, preparesTransaction } from './relay-results.js';

/**
 * The extended query protocol's Execute, Sync and Close (protocol "Extended Query"): a portal runs
 * with the decision of its Bind, or is decided again when the policy changed since; a COMMIT (an
 * Execute, or a Sync ending an implicit transaction) of DDL goes through the commit fence
 * (commit-fence.ts).
 */
export abstract class ExtendedExecuteRelay extends ExtendedProtocolRelay {
  protected execute(f: Frame): Promise<void> | undefined {
    const e = decodeExecute(f.payload);
    this.startBatch();
    const portal = this.portalFor(e.portal);
    if (portal instanceof Promise) return portal.then((p) => this.executePortal(f, p));
    if (!('sqlstate' in portal) && this.boundUnderOtherPolicy(portal))
      return this.portalDecidedAgain(e.portal, portal).then((p) => this.executePortal(f, p));
    return this.executePortal(f, portal);
  }

  /** Whether `portal` was bound under another policy than the one in force (a reload since its Bind). */
  protected boundUnderOtherPolicy(portal: PortalEntry): boolean {
    return portal.from !== undefined && portal.from.policy !== this.o.gateSession.config;
  }

  /**
   * A portal bound before a policy reload, decided again before it runs on (like a SQL cursor's
   * FETCH: a portal bound once may be executed many times, a row limit each time): the refusal
   * now, or 0A000 when the decision now would send another text than the one bound upstream
   * (other hidden columns: its rows would not be masked as they must); else the portal with the
   * plan of now.
   */
  protected portalDecidedAgain(name: string, portal: PortalEntry): Promise<PortalEntry | Refusal> {
    const from = portal.from as PreparedEntry;
    return new Promise((resolve) => {
      const pending = this.withGate(
        from.sql,
        undefined,
        (_, result) => {
          if ((result.sent?.text ?? from.sql) !== from.sent) {
            resolve({
              sqlstate: '0A000',
              message: `portal "${name}" must be bound again: what it reads or may see changed since it was bound`,
              hint: 'Close it and send Bind again.',
            });
            return;
          }
          const plan = result.plans[0] ?? null;
          // Decided under the policy of now: a later reload decides it again in turn.
          const now: PreparedEntry = { ...from, plan, policy: this.o.gateSession.config };
          const again: PortalEntry = { plan, sql: portal.sql, from: now };
          this.portals.set(name, again);
          resolve(again);
        },
        (r) => resolve(r),
      );
      void pending;
    });
  }

  private executePortal(f: Frame, portal: PortalEntry | Refusal): Promise<void> | undefined {
    if ('sqlstate' in portal) {
      this.refuseExtended(portal);
      return undefined;
    }
    // A statement that may change the catalog runs at Execute: like a Query or Parse of one, it
    // waits for a grant sync running (issue 15: a portal bound before the sync began, a prepared
    // DDL executed again, must not race the sync's GRANTs on the same catalog rows).
    const wait = portal.plan?.changesCatalog ? this.o.gateSession.manageReady?.() : undefined;
    if (wait) return wait.then(() => this.sendExecute(f.bytes, 0, f.bytes.length, portal));
    if (this.o.fence && portal.plan && commits(portal.plan)) return this.fencedExecute(f, portal);
    this.sendExecute(f.bytes, 0, f.bytes.length, portal);
    return undefined;
  }

  /**
   * An Execute of a COMMIT: when its transaction changed the catalog (DDL run, or sent earlier in
   * this batch, whose replies are then waited for after a Flush), it goes once the commit fence is
   * up and no statement of another session waits on the transaction's locks (commit-fence.ts);
   * refused with 40001 when some did not end in time.
   */
  private async fencedExecute(f: Frame, portal: PortalEntry): Promise<void> {
    if (!(await this.ddlAnswered())) return;
    if (this.o.fence?.needed() && portal.plan && preparesTransaction(portal.plan)) {
      this.refuseExtended(PREPARED_DDL_REFUSAL);
      return;
    }
    if (this.o.fence?.needed() && !(await this.o.fence.raise())) {
      this.refuseExtended({ sqlstate: FENCE_CANCEL_SQLSTATE, message: FENCE_TIMEOUT_MESSAGE });
      return;
    }
    this.sendExecute(f.bytes, 0, f.bytes.length, portal);
  }

  /**
   * A Sync outside a transaction block after DDL in its batch: it commits the implicit
   * transaction, so it goes once the commit fence is up (as fencedExecute); refused with 40001
   * (the batch fails, nothing is committed) when statements waiting on its locks did not end.
   */
  protected async fencedSync(f: Frame): Promise<void> {
    if ((await this.ddlAnswered()) && this.o.fence?.needed() && !(await this.o.fence.raise())) {
      this.startBatch();
      this.refuseExtended({ sqlstate: FENCE_CANCEL_SQLSTATE, message: FENCE_TIMEOUT_MESSAGE });
    }
    this.sendSync(f);
  }

  /** A Sync: skipping ends, the batch closes, its ReadyForQuery is expected, and it goes up as it came. */
  protected sendSync(f: Frame): void {
    this.skipping = false;
    this.startBatch();
    this.batchOpen = false;
    this.expects.push({ t: 'sync' });
    this.send(f.bytes);
  }

  /** An Execute that may change the catalog is in flight (sent, not answered). */
  protected ddlInFlight(): boolean {
    return this.expects.some((e) => e.t === 'execute' && e.plan?.changesCatalog === true);
  }

  /**
   * Waits (after a Flush, so the upstream sends them) for the replies of the Executes of DDL in
   * flight, as long as the DDL itself runs upstream: resolves false when it failed (the upstream
   * now skips to Sync) or the session closed.
   */
  private async ddlAnswered(): Promise<boolean> {
    if (!this.ddlInFlight()) return true;
    // Sent with the batch: drain uncorks once the caller has returned its promise.
    this.send(flush());
    while (this.ddlInFlight() && !this.closed) await new Promise((r) => setTimeout(r, 5));
    return !this.skipping && !this.closed;
  }

  /** An Execute (its message: `bytes[start, end)`) of `portal`, decided: its replies are expected, and it goes up as it came. */
  protected sendExecute(bytes: Buffer, start: number, end: number, portal: PortalEntry): void {
    this.expects.push({ t: 'execute', plan: portal.plan, sql: portal.sql, started: performance.now() });
    this.sendRange(bytes, start, end);
    // Postgres sends an Execute's replies only at Sync or Flush: a COMMIT's CommandComplete, which
    // publishes its DDL to the other sessions (ResultRelay.completed), must not wait behind the
    // Executes pipelined after it (`Execute COMMIT; Execute pg_sleep(60); Sync`).
    if (portal.plan && commits(portal.plan)) this.send(flush());
  }

  protected close(f: Frame): void {
    const c = decodeClose(f.payload);
    this.startBatch();
    // Closing a statement of pgwarden's own (its in-band catalog reads) is refused, as its Parse is.
    if (c.target === 'S' && isReservedStatementName(c.name)) {
      this.refuseExtended(reservedStatementRefusal(c.name));
      return;
    }
    const map: Map<string, unknown> = c.target === 'S' ? this.statements : this.portals;
    // Close of a portal may close a SQL cursor of that name: it is forgotten too (fail closed).
    if (c.target === 'P') this.o.gateSession.names.cursors.delete(c.name);
    this.expects.push({ t: 'close', undo: new MapUndo(map, c.name) });
    map.delete(c.name);
    this.send(f.bytes);
  }

  protected executeReply(head: Expect & { t: 'execute' }, f: Frame): Buffer | null {
    switch (f.code) {
      case BackendCode.DataRow:
        return this.dataRow(head.plan, f);
      case BackendCode.CommandComplete:
        this.completed(head.plan, head.sql, head.started, decodeCommandComplete(f.payload));
        this.expects.shift();
        return f.bytes;
      case BackendCode.PortalSuspended:
        // Its row limit reached: the rows went to the client, and the portal may never complete (a
        // Sync closes it outside a transaction block), so the Execute is audited now.
        this.auditDone(head.plan, head.sql, head.started, '');
        this.expects.shift();
        return f.bytes;
      case BackendCode.EmptyQueryResponse:
        this.expects.shift();
        return f.bytes;
      default:
        return f.bytes;
    }
  }
}

// How far the policy in force may lag the store: the last time it was confirmed current, the bound, and the refusal past it.
import type { Refusal } from './decision-types.js';

/** What the fleet-consistency check says about the policy in force (issue 21, "Fleet consistency"). */
export interface PolicyCurrency {
  /** False once the policy has gone unconfirmed for longer than the bound: statements are refused, /readyz fails. */
  readonly current: boolean;
  /** Milliseconds since the policy in force was last confirmed to be the store's latest. */
  readonly lagMs: number;
  /** The bound (`fleet.max_policy_lag_ms`). */
  readonly boundMs: number;
  /** The epoch and version in force. */
  readonly epoch: string;
  readonly version: number;
  /** Why it is not confirmed (store unreachable, a newer version not loaded yet); absent while current. */
  readonly reason?: string;
}

/**
 * Tracks when the policy in force was last confirmed to be the store's newest (a read of the store
 * that found it, at the time the read was sent), against a bound. Pure apart from `now` (ms, a
 * monotonic-enough clock; injected by tests).
 */
export class PolicyLag {
  private confirmedAt: number;
  private why: string | undefined;

  constructor(
    readonly boundMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.confirmedAt = now();
  }

  /** The store answered at `sentAt` (ms) with the epoch in force: the policy was current then. */
  confirm(sentAt: number): void {
    if (sentAt > this.confirmedAt) this.confirmedAt = sentAt;
    this.why = undefined;
  }

  /** Notes why the policy could not be confirmed (a failed or timed-out read, a newer version seen). */
  unconfirmed(reason: string): void {
    this.why = reason;
  }

  /** Whether the policy is within the bound now (the statement hot path: no allocation). */
  isCurrent(): boolean {
    return this.now() - this.confirmedAt <= this.boundMs;
  }

  /** The state now for `epoch`/`version` in force. */
  status(epoch: string, version: number): PolicyCurrency {
    const lagMs = Math.max(0, this.now() - this.confirmedAt);
    const current = lagMs <= this.boundMs;
    return {
      current,
      lagMs,
      boundMs: this.boundMs,
      epoch,
      version,
      ...(this.why !== undefined ? { reason: this.why } : {}),
    };
  }
}

/**
 * The refusal of a statement while `c` is not current: SQLSTATE 57P03 cannot_connect_now. Class
 * 57 is "operator intervention" and 57P03 is what PostgreSQL answers while it cannot serve yet
 * (starting up, in recovery); poolers and drivers treat it as transient and the connection as
 * unusable, so they reconnect, and the load balancer (whose /readyz check fails meanwhile) sends
 * the new connection to an instance that is current. 55000 object_not_in_prerequisite_state would
 * read as a plain statement error that an application retries on the same connection.
 */
export function staleRefusal(c: PolicyCurrency): Refusal {
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return {
    sqlstate: '57P03',
    message: `pgwarden cannot confirm that its policy is current: last confirmed against the policy store ${secs(c.lagMs)} ago, over the bound of ${secs(c.boundMs)}`,
    detail: `This instance serves policy version ${c.version} (epoch ${c.epoch})${c.reason ? `; ${c.reason}` : ''}. Statements are refused until it catches up.`,
    hint: 'Reconnect: the load balancer sends new connections to an instance whose policy is current.',
  };
}

// Maps the BackendKeyData pgwarden issues to clients onto the upstream session's own key.
import crypto from 'node:crypto';
import { encodeProcessId, issuedProcessId, type KeyOwner, RANDOM_MASK } from './cancel-key.js';

/** What a client's CancelRequest is forwarded as: the upstream backend's key. */
export interface CancelTarget {
  readonly processId: number;
  readonly secretKey: number;
  /** Sends the upstream CancelRequest; never rejects. */
  readonly cancel: () => Promise<void>;
}

/**
 * Issues our own (processId, secretKey) pairs so the upstream's never reach a client, and finds
 * the target for a CancelRequest. A key names its owner (cancel-key.ts: the fleet slot and the
 * worker), so that an instance or worker that does not hold it can route the request on. The
 * secret is compared whole in constant time (the process ID's TTL bits aside); an unknown or wrong key is ignored
 * silently, as PostgreSQL ignores it (protocol 55.2.7).
 */
export class CancelRegistry {
  private readonly byPid = new Map<number, { secret: number; target: CancelTarget }>();

  /** `owner`: the slot and worker stamped on new keys (read at each issue: a slot may be claimed later). */
  constructor(private owner: () => KeyOwner = () => ({ slot: 0, worker: 0 })) {}

  /** Who owns the keys issued from now on. */
  get self(): KeyOwner {
    return this.owner();
  }

  /**
   * Registers `target` and returns the key to send the client in BackendKeyData. Throws when this
   * process holds RANDOM_MASK (65535) keys already.
   */
  issue(target: CancelTarget): { processId: number; secretKey: number } {
    if (this.byPid.size >= RANDOM_MASK) throw new Error('no cancel key is free in this process');
    const owner = this.owner();
    let processId: number;
    do processId = encodeProcessId(owner, crypto.randomInt(1, RANDOM_MASK + 1));
    while (this.byPid.has(processId));
    const secretKey = crypto.randomBytes(4).readInt32BE(0);
    this.byPid.set(processId, { secret: secretKey, target });
    return { processId, secretKey };
  }

  /** Forgets a key when its session ends. */
  release(processId: number): void {
    this.byPid.delete(processId);
  }

  /** The target for a CancelRequest (its process ID with any TTL), or undefined when the key does not match. */
  find(processId: number, secretKey: number): CancelTarget | undefined {
    const entry = this.byPid.get(issuedProcessId(processId));
    if (!entry) return undefined;
    const a = Buffer.alloc(4);
    const b = Buffer.alloc(4);
    a.writeInt32BE(entry.secret);
    b.writeInt32BE(secretKey | 0);
    return crypto.timingSafeEqual(a, b) ? entry.target : undefined;
  }

  get size(): number {
    return this.byPid.size;
  }
}

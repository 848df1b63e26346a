// Maps the BackendKeyData pgwarden issues to clients onto the upstream session's own key.
import crypto from 'node:crypto';

/** What a client's CancelRequest is forwarded as: the upstream backend's key. */
export interface CancelTarget {
  readonly processId: number;
  readonly secretKey: number;
  /** Sends the upstream CancelRequest; never rejects. */
  readonly cancel: () => Promise<void>;
}

/**
 * Issues our own (processId, secretKey) pairs so the upstream's never reach a client, and finds
 * the target for a CancelRequest. The secret is compared in constant time; an unknown or wrong
 * key is ignored silently, as PostgreSQL ignores it (protocol 55.2.7).
 */
export class CancelRegistry {
  private readonly byPid = new Map<number, { secret: number; target: CancelTarget }>();

  /** Registers `target` and returns the key to send the client in BackendKeyData. */
  issue(target: CancelTarget): { processId: number; secretKey: number } {
    let processId: number;
    do processId = crypto.randomInt(1, 0x7fffffff);
    while (this.byPid.has(processId));
    const secretKey = crypto.randomBytes(4).readInt32BE(0);
    this.byPid.set(processId, { secret: secretKey, target });
    return { processId, secretKey };
  }

  /** Forgets a key when its session ends. */
  release(processId: number): void {
    this.byPid.delete(processId);
  }

  /** The target for a CancelRequest, or undefined when the key does not match. */
  find(processId: number, secretKey: number): CancelTarget | undefined {
    const entry = this.byPid.get(processId);
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

// Serves a CancelRequest where its key lives: this process, a sibling worker (IPC), or the fleet instance that issued it (TCP).
import net from 'node:net';
import { splitHostPort } from '../policy/config-schema.js';
import { cancelRequest } from '../wire/frontend-encode.js';
import { decrementTtl, keyOwner, keyTtl } from './cancel-key.js';
import type { CancelRegistry } from './cancel-registry.js';

/**
 * What became of a CancelRequest: canceled here (`local`), handed to the sibling worker that owns
 * the key (`worker`), forwarded to the fleet instance that owns it (`peer`), or dropped: the key
 * names this process but is unknown (`unknown`, as PostgreSQL ignores a wrong key), it may not be
 * forwarded again (`ttl-exhausted`), no live instance holds its slot (`no-peer`), or
 * MAX_FORWARDS_IN_FLIGHT forwards are already under way (`busy`).
 */
export type CancelOutcome = 'local' | 'worker' | 'peer' | 'unknown' | 'ttl-exhausted' | 'no-peer' | 'busy';

/** Where a key that is not this process's can go. Each part is optional (no workers, no fleet). */
export interface CancelRoutes {
  /** Hands the request to worker `worker` of this instance (`serve --workers`); false when it has none such. */
  readonly toWorker?: (worker: number, processId: number, secretKey: number) => boolean;
  /** The cancel-forwarding `host:port` of the live instance holding fleet slot `slot` (the store's table). */
  readonly peerAddress?: (slot: number) => Promise<string | undefined>;
  /** This instance's own advertised address: a request is never forwarded there. */
  readonly selfAddress?: () => string | undefined;
}

/** How long a forwarded CancelRequest may take (connect, send, the peer's close), ms. */
export const FORWARD_TIMEOUT_MS = 2000;
/**
 * Forwards one process runs at once. A CancelRequest needs no login, so without a bound a flood
 * of forged keys naming a live peer's slot would open a connection each, for up to
 * FORWARD_TIMEOUT_MS; beyond it a request is dropped, as PostgreSQL drops a cancel it cannot serve.
 */
export const MAX_FORWARDS_IN_FLIGHT = 64;
let forwardsInFlight = 0;

/**
 * Serves the CancelRequest `(processId, secretKey)`: a key this process holds is canceled here
 * (its secret checked in constant time); a key of a sibling worker goes to it over IPC (it checks
 * the secret, and never routes on); a key of another fleet slot is forwarded as a CancelRequest
 * to that instance's advertised address, the TTL bits of its process ID lowered by one
 * (cancel-key.ts: three forwards at most, so a stale fleet table can never make it loop), and
 * never to this instance's own address; at most MAX_FORWARDS_IN_FLIGHT at once (`busy` beyond).
 * The peer checks the secret itself: the secret key is the bearer credential, as in PostgreSQL,
 * and it is never logged. Resolves once the request is handed on (forwarded: once the peer closed,
 * or after FORWARD_TIMEOUT_MS); never rejects.
 */
export async function routeCancel(
  registry: CancelRegistry,
  routes: CancelRoutes,
  processId: number,
  secretKey: number,
): Promise<CancelOutcome> {
  const here = registry.find(processId, secretKey);
  if (here) {
    await here.cancel();
    return 'local';
  }
  const owner = keyOwner(processId);
  const self = registry.self;
  if (owner.slot === self.slot) {
    if (owner.worker !== self.worker && routes.toWorker?.(owner.worker, processId, secretKey))
      return 'worker';
    return 'unknown';
  }
  if (owner.slot === 0 || !routes.peerAddress) return 'no-peer';
  if (keyTtl(processId) === 0) return 'ttl-exhausted';
  if (forwardsInFlight >= MAX_FORWARDS_IN_FLIGHT) return 'busy';
  forwardsInFlight++;
  try {
    const address = await routes.peerAddress(owner.slot).catch(() => undefined);
    if (address === undefined || address === routes.selfAddress?.()) return 'no-peer';
    await forwardCancel(address, decrementTtl(processId), secretKey);
    return 'peer';
  } finally {
    forwardsInFlight--;
  }
}

/**
 * Sends the 16-byte CancelRequest (protocol 55.2.7) to `address` (`host:port`) and waits for the
 * peer to close, as libpq does; resolves after `timeoutMs` at the latest, and on any error.
 */
export function forwardCancel(
  address: string,
  processId: number,
  secretKey: number,
  timeoutMs = FORWARD_TIMEOUT_MS,
): Promise<void> {
  const [host, port] = splitHostPort(address);
  return new Promise((resolve) => {
    // As libpq: write the request, then wait for the peer to close (it does once it has served it).
    const socket = net.connect({ host, port }, () => socket.write(cancelRequest(processId, secretKey)));
    socket.setNoDelay(true);
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}

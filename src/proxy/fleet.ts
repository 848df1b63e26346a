// An instance's part in a fleet: its slot in the store, the owner stamped on its cancel keys, and where other owners' cancels go.
import type { Logger } from 'pino';
import type { Config } from '../policy/config-schema.js';
import { splitHostPort } from '../policy/config-schema.js';
import { FleetDirectory, FleetFullError, FleetMember } from '../policy/fleet-instances.js';
import type { KeyOwner } from './cancel-key.js';
import type { CancelRoutes } from './cancel-routing.js';

/** A process's fleet wiring (see {@link joinFleet}). */
export interface Fleet {
  /** The key owner of this process: fleet slot (0 without a store) and worker index. */
  readonly owner: () => KeyOwner;
  readonly routes: CancelRoutes;
  /** The address advertised for cancel forwarding (undefined: none). */
  readonly advertised: () => string | undefined;
  /** Records the bound listen address (`listen` with port 0 advertises the real port). */
  listening(address: { host: string; port: number }): Promise<void>;
  /** Sets the slot (a worker learns it from its primary). */
  setSlot(slot: number): void;
  /** Leaves the fleet (the store row is deleted) and closes the store connections. */
  close(): Promise<void>;
}

/** True for the wildcard addresses, which no peer can connect to. */
function wildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

/**
 * The address other instances forward CancelRequests to: `fleet.advertise`, else `listen` unless
 * it is a wildcard (then none: cancels that reach another instance are not forwarded here).
 */
export function advertiseAddress(config: Config): string | undefined {
  if (config.fleet.advertise !== undefined) return config.fleet.advertise;
  const [host] = splitHostPort(config.listen);
  return wildcard(host) ? undefined : config.listen;
}

/**
 * Joins the fleet of `config.policy_store` (issue 21). `role`:
 * - `instance` (a plain `serve`, or the primary of `serve --workers`, which holds the row for all
 *   its workers): claims a slot in `pgwarden.fleet_instances` and heartbeats it;
 * - `worker`: takes the slot its primary gives (`slot`), and only looks peers up.
 * Without a store, the slot is 0 and cancels are never forwarded to other instances. `toWorker`
 * hands a key of a sibling worker over (IPC). A store that cannot be reached (a start from
 * `policy_cache`) is logged and joined again every heartbeat (slot 0 meanwhile: keys issued then
 * are served only here). Throws {@link FleetFullError} when 255 instances are live.
 */
export async function joinFleet(
  config: Config,
  logger: Logger,
  opts: {
    readonly role: 'instance' | 'worker';
    readonly worker?: number;
    readonly workers?: number;
    readonly slot?: number;
    readonly toWorker?: CancelRoutes['toWorker'];
    readonly onSlot?: (slot: number) => void;
  },
): Promise<Fleet> {
  const url = config.policy_store;
  let address = advertiseAddress(config);
  if (url !== undefined && address === undefined && opts.role === 'instance')
    logger.warn(
      { event: 'fleet-no-address', listen: config.listen },
      'listen is a wildcard address and fleet.advertise is not set: other instances cannot forward cancels here',
    );
  let member: FleetMember | undefined;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  const join = async (): Promise<void> => {
    if (url === undefined || opts.role !== 'instance' || closed) return;
    try {
      member = await FleetMember.join(url, {
        address,
        workers: opts.workers ?? 1,
        heartbeatMs: config.fleet.heartbeat_ms,
        ttlMs: config.fleet.instance_ttl_ms,
        logger,
        ...(opts.onSlot ? { onSlot: opts.onSlot } : {}),
      });
      if (closed) await member.close();
      else if (retry !== undefined) opts.onSlot?.(member.slot);
    } catch (e) {
      if (e instanceof FleetFullError) throw e;
      // The store unreachable (a start from policy_cache): serve, and join once it is back.
      if (retry === undefined)
        logger.warn(
          { event: 'fleet-join-failed', err: (e as Error).message },
          'cannot join the fleet now: sessions opened meanwhile cannot be canceled through another instance',
        );
      retry = setTimeout(() => void join().catch(() => {}), Math.max(config.fleet.heartbeat_ms, 1000));
      retry.unref();
    }
  };
  await join();
  const directory = url !== undefined ? FleetDirectory.open(url) : undefined;
  let slot = opts.slot ?? 0;
  const worker = opts.worker ?? 0;
  return {
    owner: () => ({ slot: member?.slot ?? slot, worker }),
    routes: {
      ...(opts.toWorker ? { toWorker: opts.toWorker } : {}),
      ...(directory ? { peerAddress: (s: number) => directory.addressOf(s) } : {}),
      selfAddress: () => address,
    },
    advertised: () => address,
    async listening(bound) {
      if (config.fleet.advertise !== undefined || address === undefined) return;
      const [host, port] = splitHostPort(address);
      if (port !== 0) return;
      address = `${host.includes(':') ? `[${host}]` : host}:${bound.port}`;
      await member?.setAddress(address);
    },
    setSlot(s) {
      slot = s;
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      await member?.close();
      await directory?.close();
    },
  };
}

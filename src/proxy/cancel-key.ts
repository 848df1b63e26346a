// The layout of the BackendKeyData pgwarden issues: which fleet instance and worker own a key, and a forwarding TTL.

/**
 * Bits of the process ID (31 usable: it is kept positive, as PostgreSQL's pids are and as
 * pg_basebackup expects): the fleet slot of the instance (8 bits, 1–255; 0: not in a fleet), the
 * worker of `serve --workers` (5 bits, 0–31), how many more times the CancelRequest may be
 * forwarded (2 bits, 3 when issued: PgBouncer's peering keeps such a TTL in its cancel key,
 * CANCELLATION_TTL_MASK, so that a request can never loop) and 16 random bits. The secret key is
 * 32 random bits, compared whole: the TTL lives in the process ID so that the secret keeps all its
 * entropy (a key differing in any bit of the secret cancels nothing).
 */
export const SLOT_BITS = 8;
export const WORKER_BITS = 5;
export const TTL_BITS = 2;
export const RANDOM_BITS = 16;
/** Largest fleet slot (the `pgwarden.fleet_instances` table has at most this many live rows). */
export const MAX_SLOT = (1 << SLOT_BITS) - 1;
/** Largest worker index, so `serve --workers` takes at most MAX_WORKER + 1. */
export const MAX_WORKER = (1 << WORKER_BITS) - 1;
/** Mask of the random part of a process ID: at most this many keys per process. */
export const RANDOM_MASK = (1 << RANDOM_BITS) - 1;
/** The TTL bits of a process ID (a fresh key has both set: three more forwards allowed). */
export const TTL_MASK = ((1 << TTL_BITS) - 1) << RANDOM_BITS;

/** Who owns a key: the instance's fleet slot (0: no fleet) and the worker within it (0: no workers). */
export interface KeyOwner {
  readonly slot: number;
  readonly worker: number;
}

/**
 * The process ID of a fresh key (TTL 3) owned by `owner` with random part `random` (1 … RANDOM_MASK).
 * Throws RangeError for an owner out of range (slot 0–255, worker 0–31).
 */
export function encodeProcessId(owner: KeyOwner, random: number): number {
  if (!Number.isInteger(owner.slot) || owner.slot < 0 || owner.slot > MAX_SLOT)
    throw new RangeError(`fleet slot ${owner.slot} is outside 0–${MAX_SLOT}`);
  if (!Number.isInteger(owner.worker) || owner.worker < 0 || owner.worker > MAX_WORKER)
    throw new RangeError(`worker ${owner.worker} is outside 0–${MAX_WORKER}`);
  return (
    ((owner.slot << (WORKER_BITS + TTL_BITS + RANDOM_BITS)) |
      (owner.worker << (TTL_BITS + RANDOM_BITS)) |
      TTL_MASK |
      (random & RANDOM_MASK)) >>>
    0
  );
}

/** The owner a process ID names (any 32-bit value; the sign bit is ignored). */
export function keyOwner(processId: number): KeyOwner {
  const p = processId >>> 0;
  return {
    slot: (p >>> (WORKER_BITS + TTL_BITS + RANDOM_BITS)) & MAX_SLOT,
    worker: (p >>> (TTL_BITS + RANDOM_BITS)) & MAX_WORKER,
  };
}

/** The forwards a process ID still allows (0–3). */
export function keyTtl(processId: number): number {
  return ((processId >>> 0) & TTL_MASK) >>> RANDOM_BITS;
}

/** The process ID with its TTL lowered by one (the caller checked it is not 0). */
export function decrementTtl(processId: number): number {
  return ((processId >>> 0) - (1 << RANDOM_BITS)) >>> 0;
}

/** The process ID as issued (TTL bits set): what a registry keys its sessions by. */
export function issuedProcessId(processId: number): number {
  return ((processId >>> 0) | TTL_MASK) >>> 0;
}

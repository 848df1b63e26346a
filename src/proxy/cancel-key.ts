// The layout of the BackendKeyData pgwarden issues: which fleet instance and worker own a key, and a forwarding TTL.

/**
 * Bits of the process ID (31 usable: it is kept positive, as PostgreSQL's pids are and as
 * pg_basebackup expects) and of the secret key. The process ID carries the fleet slot of the
 * instance (8 bits, 1–255; 0: not in a fleet), the worker of `serve --workers` (5 bits, 0–31) and
 * 18 random bits; the secret key carries 30 random bits and, in its two lowest bits, how many more
 * times the CancelRequest may be forwarded (3 when issued), as PgBouncer's peering keeps a TTL in
 * the last two bits of its cancel key (CANCELLATION_TTL_MASK, so that a request can never loop).
 */
export const SLOT_BITS = 8;
export const WORKER_BITS = 5;
export const RANDOM_BITS = 18;
/** Largest fleet slot (the `pgwarden.fleet_instances` table has at most this many live rows). */
export const MAX_SLOT = (1 << SLOT_BITS) - 1;
/** Largest worker index, so `serve --workers` takes at most MAX_WORKER + 1. */
export const MAX_WORKER = (1 << WORKER_BITS) - 1;
/** Mask of the random part of a process ID. */
export const RANDOM_MASK = (1 << RANDOM_BITS) - 1;
/** The TTL bits of a secret key; a fresh key has both set (three more forwards allowed). */
export const TTL_MASK = 0x3;

/** Who owns a key: the instance's fleet slot (0: no fleet) and the worker within it (0: no workers). */
export interface KeyOwner {
  readonly slot: number;
  readonly worker: number;
}

/**
 * The process ID of a key owned by `owner` with random part `random` (1 … RANDOM_MASK).
 * Throws RangeError for an owner out of range (slot 0–255, worker 0–31).
 */
export function encodeProcessId(owner: KeyOwner, random: number): number {
  if (!Number.isInteger(owner.slot) || owner.slot < 0 || owner.slot > MAX_SLOT)
    throw new RangeError(`fleet slot ${owner.slot} is outside 0–${MAX_SLOT}`);
  if (!Number.isInteger(owner.worker) || owner.worker < 0 || owner.worker > MAX_WORKER)
    throw new RangeError(`worker ${owner.worker} is outside 0–${MAX_WORKER}`);
  return (
    ((owner.slot << (WORKER_BITS + RANDOM_BITS)) | (owner.worker << RANDOM_BITS) | (random & RANDOM_MASK)) >>>
    0
  );
}

/** The owner a process ID names (any 32-bit value; the sign bit is ignored). */
export function keyOwner(processId: number): KeyOwner {
  const p = processId >>> 0;
  return {
    slot: (p >>> (WORKER_BITS + RANDOM_BITS)) & MAX_SLOT,
    worker: (p >>> RANDOM_BITS) & MAX_WORKER,
  };
}

/** The forwards a secret key still allows (0–3). */
export function keyTtl(secretKey: number): number {
  return (secretKey >>> 0) & TTL_MASK;
}

/** The secret key with its TTL lowered by one (the caller checked it is not 0), as a signed Int32. */
export function decrementTtl(secretKey: number): number {
  const s = secretKey >>> 0;
  return (s & ~TTL_MASK) | ((s & TTL_MASK) - 1) | 0;
}

/** A fresh secret key from 32 random bits: the TTL bits set, as a signed Int32. */
export function freshSecret(random32: number): number {
  return random32 | TTL_MASK | 0;
}

/** The part of a secret key that is secret (the TTL bits cleared): what a CancelRequest is checked against. */
export function secretPart(secretKey: number): number {
  return (secretKey & ~TTL_MASK) | 0;
}

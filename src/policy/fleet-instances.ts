// The live instances of a fleet in the policy store: a slot per instance, its cancel-forwarding address, heartbeats and expiry.
import crypto from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import type { Logger } from 'pino';
import { POLICY_MIGRATIONS } from './policy-migrations.js';
import { redactUrl } from './policy-store.js';
import { applyMigrations } from './schema-migrations.js';

/** The advisory lock taken while slots are claimed, so two instances never take the same one. */
const FLEET_LOCK = 0x70677766; // 'pgwf'
/** Slots an instance may hold (cancel-key.ts keeps 8 bits of the process ID for it). */
const MAX_SLOT = 255;

/** No slot is free: 255 instances are live in the store. */
export class FleetFullError extends Error {
  constructor() {
    super(`the fleet is full: ${MAX_SLOT} instances are live in pgwarden.fleet_instances`);
    this.name = 'FleetFullError';
  }
}

/** Options of {@link FleetMember.join}. */
export interface FleetJoinOptions {
  /** The `host:port` other instances forward CancelRequests to; undefined: none (cancels are not forwarded here). */
  readonly address: string | undefined;
  /** Worker processes behind that address (`serve --workers`; 1 without). */
  readonly workers: number;
  /** How often the row is renewed (ms). */
  readonly heartbeatMs: number;
  /** How long the row lives without a heartbeat (ms). */
  readonly ttlMs: number;
  readonly logger: Logger;
  /** Called when the instance had to take another slot (its row expired and was taken meanwhile). */
  readonly onSlot?: (slot: number) => void;
}

function pool(url: string): pg.Pool {
  const p = new pg.Pool({
    connectionString: url,
    max: 2,
    connectionTimeoutMillis: 5000,
    query_timeout: 5000,
    application_name: 'pgwarden fleet',
  });
  p.on('error', () => {});
  return p;
}

/**
 * How long (ms) the address of a slot is reused by {@link FleetDirectory.addressOf}: CancelRequests
 * are served without a login, so a flood naming other slots must not cost a store query each.
 */
export const ADDRESS_REUSE_MS = 1000;

/** Looks up the live instances of the fleet (what a process that forwards cancels needs). */
export class FleetDirectory {
  /** The last lookup of each slot (at most 255), answered or in flight, with when it was asked. */
  private readonly lookups = new Map<
    number,
    { readonly at: number; readonly address: Promise<string | undefined> }
  >();

  protected constructor(protected readonly pool: pg.Pool) {}

  /** A directory over the store at `url` (connects lazily). */
  static open(url: string): FleetDirectory {
    return new FleetDirectory(pool(url));
  }

  /**
   * The cancel-forwarding address of the live instance holding `slot`, or undefined (none, or
   * expired). One store query per slot at a time, its answer reused for {@link ADDRESS_REUSE_MS}
   * (an unauthenticated flood of CancelRequests naming other slots would otherwise queue a query
   * each on the directory's two connections, and a real cancel behind them); a failed lookup is
   * not reused. Rejects with the store's error.
   */
  addressOf(slot: number): Promise<string | undefined> {
    const now = Date.now();
    const last = this.lookups.get(slot);
    if (last && now - last.at < ADDRESS_REUSE_MS) return last.address;
    const address = this.pool
      .query<{ cancel_address: string | null }>(
        'SELECT cancel_address FROM pgwarden.fleet_instances WHERE slot = $1 AND expires_at > now()',
        [slot],
      )
      .then((r) => r.rows[0]?.cancel_address ?? undefined);
    this.lookups.set(slot, { at: now, address });
    address.catch(() => {
      if (this.lookups.get(slot)?.address === address) this.lookups.delete(slot);
    });
    return address;
  }

  /** The live instances, by slot: what an operator (and the fleet test) reads. */
  async live(): Promise<
    { slot: number; address: string | null; host: string; pid: number; workers: number }[]
  > {
    const r = await this.pool.query<{
      slot: number;
      cancel_address: string | null;
      host: string;
      pid: number;
      workers: number;
    }>(
      'SELECT slot, cancel_address, host, pid, workers FROM pgwarden.fleet_instances WHERE expires_at > now() ORDER BY slot',
    );
    return r.rows.map((x) => ({
      slot: x.slot,
      address: x.cancel_address,
      host: x.host,
      pid: x.pid,
      workers: x.workers,
    }));
  }

  /** Closes the directory's connections. */
  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}

/**
 * This instance's row in `pgwarden.fleet_instances` (issue 21: "instances find each other through
 * the store"). {@link join} claims the lowest free slot (1–255, rows past their expiry are free)
 * under an advisory lock; a heartbeat renews it every `heartbeatMs`. When the row has expired and
 * been taken meanwhile (the instance was cut off from the store longer than `ttlMs`), the instance
 * takes its slot back if it is free, or another one (`onSlot`; keys issued before then are no longer
 * routed to it). A heartbeat that fails is logged once per streak. {@link close} deletes the row.
 */
export class FleetMember extends FleetDirectory {
  private timer: NodeJS.Timeout | undefined;
  private failing = false;
  private closed = false;

  private constructor(
    pool: pg.Pool,
    private readonly instanceId: string,
    private current: number,
    private address: string | undefined,
    private readonly opts: FleetJoinOptions,
  ) {
    super(pool);
  }

  /**
   * Joins the fleet of the store at `url`: applies the store's migrations, claims a slot, starts
   * the heartbeat. Throws {@link FleetFullError}, or the store's error (message without password).
   */
  static async join(url: string, opts: FleetJoinOptions): Promise<FleetMember> {
    const p = pool(url);
    const id = crypto.randomUUID();
    try {
      const client = await p.connect();
      try {
        await applyMigrations(client, POLICY_MIGRATIONS);
      } finally {
        client.release();
      }
      const slot = await claim(p, id, opts, undefined);
      const member = new FleetMember(p, id, slot, opts.address, opts);
      member.timer = setInterval(() => void member.beat(), opts.heartbeatMs);
      member.timer.unref();
      opts.logger.info({ event: 'fleet-joined', slot, address: opts.address ?? null }, 'joined the fleet');
      return member;
    } catch (e) {
      await p.end().catch(() => {});
      if (e instanceof FleetFullError) throw e;
      throw new Error(`policy store ${redactUrl(url)}: cannot join the fleet: ${(e as Error).message}`);
    }
  }

  /** The slot this instance holds (1–255). */
  get slot(): number {
    return this.current;
  }

  /** Sets the cancel-forwarding address (once the listener is bound: its real port). */
  async setAddress(address: string | undefined): Promise<void> {
    this.address = address;
    await this.beat();
  }

  /** Renews the row; takes a slot again when it was lost. */
  private async beat(): Promise<void> {
    if (this.closed) return;
    try {
      const r = await this.pool.query(
        `UPDATE pgwarden.fleet_instances
            SET heartbeat_at = now(), expires_at = now() + $3 * interval '1 millisecond', cancel_address = $4
          WHERE slot = $1 AND instance_id = $2`,
        [this.current, this.instanceId, this.opts.ttlMs, this.address ?? null],
      );
      if (r.rowCount === 0) {
        const was = this.current;
        this.current = await claim(this.pool, this.instanceId, { ...this.opts, address: this.address }, was);
        this.opts.logger.error(
          { event: 'fleet-slot-lost', slot: was, now: this.current },
          this.current === was
            ? 'the fleet row had expired (the store was out of reach); slot taken again'
            : 'the fleet row had expired and its slot was taken: cancels of sessions opened before are no longer routed here',
        );
        if (this.current !== was) this.opts.onSlot?.(this.current);
      }
      if (this.failing) this.opts.logger.info({ event: 'fleet-heartbeat-back' }, 'fleet heartbeat back');
      this.failing = false;
    } catch (e) {
      if (!this.failing)
        this.opts.logger.warn(
          { event: 'fleet-heartbeat-failed', err: (e as Error).message },
          'cannot renew the fleet row',
        );
      this.failing = true;
    }
  }

  /** Stops the heartbeat and deletes the row (the slot is free at once). */
  override async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.pool
      .query('DELETE FROM pgwarden.fleet_instances WHERE instance_id = $1', [this.instanceId])
      .catch(() => {});
    await super.close();
  }
}

/** Claims a slot under the fleet lock: `prefer` when it is free, else the lowest free one. */
async function claim(
  p: pg.Pool,
  id: string,
  opts: Pick<FleetJoinOptions, 'address' | 'workers' | 'ttlMs'>,
  prefer: number | undefined,
): Promise<number> {
  const client = await p.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [FLEET_LOCK]);
    await client.query('DELETE FROM pgwarden.fleet_instances WHERE expires_at <= now() OR instance_id = $1', [
      id,
    ]);
    const r = await client.query<{ slot: number }>(
      `INSERT INTO pgwarden.fleet_instances (slot, instance_id, cancel_address, host, pid, workers, expires_at)
       SELECT s, $1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond'
         FROM generate_series(1, ${MAX_SLOT}) s
        WHERE s NOT IN (SELECT slot FROM pgwarden.fleet_instances)
        ORDER BY s = $7 DESC, s LIMIT 1
       RETURNING slot`,
      [id, opts.address ?? null, os.hostname(), process.pid, opts.workers, opts.ttlMs, prefer ?? 0],
    );
    await client.query('COMMIT');
    const slot = r.rows[0]?.slot;
    if (slot === undefined) throw new FleetFullError();
    return slot;
  } catch (e) {
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

// The commit fence: while a transaction that changed a database's catalog commits, that database's other sessions wait, and their statements waiting on its locks are canceled.
import type { Logger } from 'pino';

/**
 * The longest a COMMIT waits for the statements it cancels to end (ms): a statement that then still
 * waits on its locks makes the COMMIT fail instead (40001, {@link FENCE_TIMEOUT_MESSAGE}).
 */
export const COMMIT_FENCE_MS = 5000;

/** The longest other sessions are held for one fence, whatever happens to its COMMIT (ms). */
export const FENCE_HOLD_MS = 15_000;

/** How often the fence looks at the sessions it waits for (ms), and re-sends a cancel that found nothing running. */
const POLL_MS = 20;
const RECANCEL_MS = 200;

/** The SQLSTATE a statement canceled by the fence fails with: serialization_failure (retry it). */
export const FENCE_CANCEL_SQLSTATE = '40001';

/** The message of a statement the fence canceled (instead of 57014's "canceling statement due to user request"). */
export const FENCE_CANCEL_MESSAGE =
  'canceling statement: a concurrent transaction changed the definition of a relation it waited for, and pgwarden had decided it under the definition before that change';

/** The message of a COMMIT refused because statements waiting on its locks did not end within COMMIT_FENCE_MS. */
export const FENCE_TIMEOUT_MESSAGE = `could not commit: statements of other sessions waiting on this transaction's locks, decided under the catalog before its changes, did not end within ${COMMIT_FENCE_MS / 1000} s; the transaction was rolled back`;

/** One session of a database as the fence sees it (a relay). */
export interface FencedSession {
  /** The upstream backend's process ID (its BackendKeyData). */
  readonly backendPid: number;
  /** Replies are owed, or client messages are being decided (RelayCore.busy). */
  readonly busy: boolean;
  /** OIDs of the relations the statements sent and not yet answered name. */
  inFlightRelations(): ReadonlySet<number>;
  /**
   * Whether every statement in flight binds only system catalog relations, under a search path
   * on which no other schema comes before the one each binds in (RelayCore.inFlightBindsOnlyCatalog).
   * Such a statement binds the same relations after the commit (the committing transaction cannot
   * put one of its own in front of them), so waiting on it reads only the new definitions, which
   * the catalog shows any caller: it is not canceled for waiting (pgcli's completion refresher
   * on its second connection during a migration). Absent: false.
   */
  inFlightBindsOnlyCatalog?(): boolean;
  /** Cancels the statement running upstream; its 57014 is then reported as the fence's ({@link FENCE_CANCEL_MESSAGE}). */
  cancelForFence(): void;
}

/**
 * What the fence asks the upstream (on a connection of its own, outside the committing
 * transaction): `locked`, the relations backend `pid` holds AccessExclusiveLock on, and the views
 * reading one of them, transitively (PostgreSQL expands a view a statement names when it binds it:
 * none of these can have a statement running on it meanwhile, so one in flight that names them has
 * not bound them yet); and `blockers`, for each of `pids`, pg_blocking_pids() (9.26 System
 * Information Functions).
 */
export type LockProbe = (
  pid: number,
  pids: readonly number[],
) => Promise<{
  readonly locked: readonly number[];
  readonly blockers: ReadonlyMap<number, readonly number[]>;
}>;

/** The probe's SQL: $1 the committing backend, $2 the pids of the sessions in flight. */
export const LOCK_PROBE_SQL = `WITH RECURSIVE held(oid) AS (
  SELECT l.relation FROM pg_locks l
   WHERE l.pid = $1 AND l.locktype = 'relation' AND l.granted AND l.mode = 'AccessExclusiveLock'
  UNION
  SELECT r.ev_class FROM held h
    JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = h.oid AND d.classid = 'pg_rewrite'::regclass
    JOIN pg_rewrite r ON r.oid = d.objid
   WHERE r.ev_class <> h.oid
)
SELECT (SELECT coalesce(array_agg(oid::int8), '{}') FROM held)::int8[] AS locked,
       (SELECT coalesce(json_agg(json_build_array(p, pg_blocking_pids(p))), '[]') FROM unnest($2::int[]) p) AS blockers`;

/** The fence as one session's relay uses it (session-relay.ts wires it to the process's CommitFence). */
export interface SessionFence {
  /** Resolves once no other session's fence holds this database; undefined when none does now. */
  held(): Promise<void> | undefined;
  /** Fences raised on the database so far (CommitFence.epoch). */
  epoch(): number;
  /** Whether this session's transaction changed the catalog: its COMMIT must raise the fence first. */
  needed(): boolean;
  /** CommitFence.raise for this session's COMMIT: true when it may go, false when it must be refused (40001). */
  raise(): Promise<boolean>;
  /** This session's fence comes down (its COMMIT's ReadyForQuery, or the session ends). */
  lower(): void;
  /** The session ends: it is forgotten, and its fence comes down. */
  close(): void;
}

interface Up {
  readonly owner: FencedSession;
  readonly down: Promise<void>;
  readonly lower: () => void;
}

/**
 * The commit fence of one pgwarden process (DESIGN.md "Known limits": a statement that waits for
 * another session's DDL lock). PostgreSQL binds a statement's names and expands its views once it
 * holds its locks: a statement pgwarden decided under the catalog of before, waiting on the lock of
 * a transaction that redefines what it reads, would run with the new definition once that commits.
 * So before such a COMMIT goes upstream, {@link raise} holds every other session of the database
 * (their messages wait, unread, until the COMMIT's ReadyForQuery has published the new catalog) and
 * cancels those of its sessions with a statement in flight that waits on the committing backend
 * (pg_blocking_pids, transitively) or names a relation it holds AccessExclusiveLock on (or a view
 * reading one); the COMMIT
 * goes once none is left. Sessions of other workers and instances are not seen (README).
 */
export class CommitFence {
  private readonly sessions = new Map<string, Set<FencedSession>>();
  private readonly up = new Map<string, Up>();
  private readonly epochs = new Map<string, number>();

  constructor(private readonly log?: Logger) {}

  /** Registers a session of `database`; returns the function that unregisters it. */
  register(database: string, s: FencedSession): () => void {
    const set = this.sessions.get(database) ?? new Set<FencedSession>();
    this.sessions.set(database, set);
    set.add(s);
    return () => {
      set.delete(s);
      const up = this.up.get(database);
      if (up?.owner === s) up.lower();
    };
  }

  /** Resolves once no fence of `database` is up but `s`'s own; undefined when none holds `s` now. */
  held(database: string, s: FencedSession): Promise<void> | undefined {
    const up = this.up.get(database);
    return up && up.owner !== s ? up.down : undefined;
  }

  /** Fences raised on `database` so far: a decision awaited across one is made again. */
  epoch(database: string): number {
    return this.epochs.get(database) ?? 0;
  }

  /** Lowers `owner`'s fence of `database` (its COMMIT's ReadyForQuery, or the session ended); nothing when none is up. */
  lower(database: string, owner: FencedSession): void {
    const up = this.up.get(database);
    if (up?.owner === owner) up.lower();
  }

  /**
   * Raises the fence of `database` for `owner`'s COMMIT (waiting first for another's to come down),
   * then cancels the statements of other sessions that wait on `owner`'s backend or name what it
   * holds AccessExclusiveLock on, until none is left: resolves true when the COMMIT may go (the
   * fence stays up until {@link lower}), false when some did not end within COMMIT_FENCE_MS or the
   * probe failed (the fence is lowered: the caller refuses the COMMIT). Never rejects.
   */
  async raise(database: string, owner: FencedSession, probe: LockProbe): Promise<boolean> {
    for (let up = this.up.get(database); up && up.owner !== owner; up = this.up.get(database)) await up.down;
    if (!this.up.has(database)) this.put(database, owner);
    const deadline = Date.now() + COMMIT_FENCE_MS;
    const canceled = new Map<FencedSession, number>();
    try {
      for (;;) {
        const others = [...(this.sessions.get(database) ?? [])].filter((s) => s !== owner && s.busy);
        if (others.length === 0) return true;
        const { locked, blockers } = await probe(
          owner.backendPid,
          others.map((s) => s.backendPid),
        );
        const targets = waitingOn(owner.backendPid, others, locked, blockers);
        if (targets.length === 0) return true;
        if (Date.now() >= deadline) {
          this.log?.warn(
            { event: 'commit-fence-timeout', database, waiting: targets.map((s) => s.backendPid) },
            'statements waiting on a committing transaction did not end; the COMMIT is refused',
          );
          this.lower(database, owner);
          return false;
        }
        const now = Date.now();
        for (const t of targets) {
          if (now - (canceled.get(t) ?? 0) < RECANCEL_MS) continue;
          canceled.set(t, now);
          this.log?.info(
            { event: 'commit-fence-cancel', database, pid: t.backendPid, committer: owner.backendPid },
            'canceling a statement that waits on a committing transaction that changed the catalog',
          );
          t.cancelForFence();
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    } catch (e) {
      this.log?.error(
        { event: 'commit-fence-failed', database, err: (e as Error).message },
        'commit fence probe failed',
      );
      this.lower(database, owner);
      return false;
    }
  }

  private put(database: string, owner: FencedSession): void {
    let lower!: () => void;
    const down = new Promise<void>((resolve) => {
      lower = resolve;
    });
    // Never held longer than FENCE_HOLD_MS, whatever becomes of the COMMIT.
    const timer = setTimeout(() => up.lower(), FENCE_HOLD_MS);
    timer.unref();
    const up: Up = {
      owner,
      down,
      lower: () => {
        clearTimeout(timer);
        if (this.up.get(database) === up) this.up.delete(database);
        lower();
      },
    };
    this.up.set(database, up);
    this.epochs.set(database, this.epoch(database) + 1);
  }
}

/**
 * The sessions of `others` whose statement in flight must not outlive the COMMIT of backend `pid`:
 * those blocked by it, directly or through one another (pg_blocking_pids), and those naming a
 * relation of `locked`.
 */
function waitingOn(
  pid: number,
  others: readonly FencedSession[],
  locked: readonly number[],
  blockers: ReadonlyMap<number, readonly number[]>,
): FencedSession[] {
  const blocked = new Set<number>([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of others) {
      if (blocked.has(s.backendPid)) continue;
      if ((blockers.get(s.backendPid) ?? []).some((b) => blocked.has(b))) {
        blocked.add(s.backendPid);
        grew = true;
      }
    }
  }
  const lockedSet = new Set(locked);
  return others.filter((s) => {
    if (blocked.has(s.backendPid) && s.inFlightBindsOnlyCatalog?.() !== true) return true;
    if (lockedSet.size === 0) return false;
    for (const oid of s.inFlightRelations()) if (lockedSet.has(oid)) return true;
    return false;
  });
}

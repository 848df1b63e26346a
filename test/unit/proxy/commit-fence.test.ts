// The commit fence: who it holds, whom it cancels (blocked by the committer, transitively, or naming what it locks), and that it never waits unboundedly.
import { describe, expect, test, vi } from 'vitest';
import {
  COMMIT_FENCE_MS,
  CommitFence,
  type FencedSession,
  type LockProbe,
} from '../../../src/proxy/commit-fence.js';

/** A session stand-in: busy until canceled (when `cancelEnds`), naming `relations`. */
function session(pid: number, opts: { busy?: boolean; relations?: number[]; cancelEnds?: boolean } = {}) {
  const s = {
    backendPid: pid,
    busy: opts.busy ?? true,
    canceled: 0,
    inFlightRelations: () => new Set(opts.relations ?? []),
    cancelForFence: () => {
      s.canceled++;
      if (opts.cancelEnds ?? true) s.busy = false;
    },
  };
  return s satisfies FencedSession;
}

/** A probe answering `blockers` (pid → pg_blocking_pids) and `locked`. */
function probe(blockers: Record<number, number[]>, locked: number[] = []): LockProbe {
  return async (_pid, pids) => ({
    locked,
    blockers: new Map(pids.map((p) => [p, blockers[p] ?? []])),
  });
}

describe('CommitFence.raise', () => {
  test('cancels the sessions blocked by the committer, directly or through another, and no other', async () => {
    const f = new CommitFence();
    const committer = session(1, { busy: false });
    const direct = session(2);
    const behind = session(3);
    const unrelated = session(4, { relations: [99] });
    for (const s of [committer, direct, behind, unrelated]) f.register('demo', s);
    // unrelated stays busy: it is never canceled, and the COMMIT still goes.
    unrelated.cancelForFence = () => {
      throw new Error('unrelated canceled');
    };
    expect(await f.raise('demo', committer, probe({ 2: [1], 3: [2] }, [42]))).toBe(true);
    expect([direct.canceled, behind.canceled]).toEqual([1, 1]);
  });

  test('cancels a session in flight naming a relation the committer holds AccessExclusiveLock on', async () => {
    const f = new CommitFence();
    const committer = session(1, { busy: false });
    const naming = session(2, { relations: [42] });
    f.register('demo', committer);
    f.register('demo', naming);
    expect(await f.raise('demo', committer, probe({}, [42]))).toBe(true);
    expect(naming.canceled).toBe(1);
  });

  test('holds the other sessions of the database until lowered, not those of another database', async () => {
    const f = new CommitFence();
    const committer = session(1, { busy: false });
    const other = session(2, { busy: false });
    const elsewhere = session(3, { busy: false });
    f.register('demo', committer);
    f.register('demo', other);
    f.register('other', elsewhere);
    const before = f.epoch('demo');
    expect(await f.raise('demo', committer, probe({}))).toBe(true);
    expect(f.epoch('demo')).toBe(before + 1);
    expect(f.held('demo', committer)).toBeUndefined();
    expect(f.held('other', elsewhere)).toBeUndefined();
    const held = f.held('demo', other);
    expect(held).toBeInstanceOf(Promise);
    f.lower('demo', committer);
    await held;
    expect(f.held('demo', other)).toBeUndefined();
  });

  test('a second committer waits for the first fence to come down', async () => {
    const f = new CommitFence();
    const a = session(1, { busy: false });
    const b = session(2, { busy: false });
    f.register('demo', a);
    f.register('demo', b);
    expect(await f.raise('demo', a, probe({}))).toBe(true);
    let bRaised = false;
    const second = f.raise('demo', b, probe({})).then((ok) => {
      bRaised = ok;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(bRaised).toBe(false);
    f.lower('demo', a);
    await second;
    expect(bRaised).toBe(true);
    expect(f.held('demo', a)).toBeInstanceOf(Promise);
  });

  test('a session that unregisters lowers its fence', async () => {
    const f = new CommitFence();
    const a = session(1, { busy: false });
    const b = session(2, { busy: false });
    const unregister = f.register('demo', a);
    f.register('demo', b);
    await f.raise('demo', a, probe({}));
    const held = f.held('demo', b);
    unregister();
    await held;
    expect(f.held('demo', b)).toBeUndefined();
  });

  test('refuses (false) and lowers when a blocked session does not end within COMMIT_FENCE_MS', async () => {
    vi.useFakeTimers();
    try {
      const f = new CommitFence();
      const committer = session(1, { busy: false });
      const stuck = session(2, { cancelEnds: false });
      const waiting = session(3, { busy: false });
      f.register('demo', committer);
      f.register('demo', stuck);
      f.register('demo', waiting);
      const raised = f.raise('demo', committer, probe({ 2: [1] }));
      await vi.advanceTimersByTimeAsync(COMMIT_FENCE_MS + 100);
      expect(await raised).toBe(false);
      expect(stuck.canceled).toBeGreaterThan(1);
      expect(f.held('demo', waiting)).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  test('refuses (false) and lowers when the probe fails', async () => {
    const f = new CommitFence();
    const committer = session(1, { busy: false });
    const other = session(2);
    f.register('demo', committer);
    f.register('demo', other);
    const failing: LockProbe = async () => {
      throw new Error('connection lost');
    };
    expect(await f.raise('demo', committer, failing)).toBe(false);
    expect(f.held('demo', other)).toBeUndefined();
  });

  test('asks nothing of the upstream when no other session is busy', async () => {
    const f = new CommitFence();
    const committer = session(1, { busy: false });
    f.register('demo', committer);
    f.register('demo', session(2, { busy: false }));
    const never: LockProbe = async () => {
      throw new Error('probed');
    };
    expect(await f.raise('demo', committer, never)).toBe(true);
  });
});

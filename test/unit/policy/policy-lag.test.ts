// The policy in force is current while the store confirmed it within the bound; past it, statements get 57P03 saying why.
import { describe, expect, test } from 'vitest';
import { PolicyLag, staleRefusal } from '../../../src/policy/policy-lag.js';

describe('PolicyLag', () => {
  test('confirmed within the bound is current; past it, not, with the reason last noted', () => {
    let now = 1_000_000;
    const lag = new PolicyLag(10_000, () => now);
    expect(lag.status('e1', 3)).toEqual({
      current: true,
      lagMs: 0,
      boundMs: 10_000,
      epoch: 'e1',
      version: 3,
    });
    now += 9_000;
    lag.confirm(now - 500);
    now += 9_400;
    expect(lag.isCurrent()).toBe(true);
    lag.unconfirmed('the policy store has not answered for 1000 ms');
    now += 200;
    const c = lag.status('e1', 3);
    expect(c).toEqual({
      current: false,
      lagMs: 10_100,
      boundMs: 10_000,
      epoch: 'e1',
      version: 3,
      reason: 'the policy store has not answered for 1000 ms',
    });
    expect(lag.isCurrent()).toBe(false);
    expect(staleRefusal(c)).toEqual({
      sqlstate: '57P03',
      message:
        'pgwarden cannot confirm that its policy is current: last confirmed against the policy store 10.1 s ago, over the bound of 10.0 s',
      detail:
        'This instance serves policy version 3 (epoch e1); the policy store has not answered for 1000 ms. Statements are refused until it catches up.',
      hint: 'Reconnect: the load balancer sends new connections to an instance whose policy is current.',
    });
    // A confirmation sent earlier than the last one never moves the time back.
    lag.confirm(now - 20_000);
    expect(lag.isCurrent()).toBe(false);
    lag.confirm(now);
    expect(lag.status('e1', 3)).toMatchObject({ current: true, lagMs: 0 });
    expect(lag.status('e1', 3).reason).toBeUndefined();
  });
});

// One session whose client never reads, or moves a held message at a trickle, must not hold the shared memory budget from every other session: their large messages still pass.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { query } from '../../../src/wire/frontend-encode.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { RawClient } from '../../helpers/raw-client.js';

const MiB = 2 ** 20;
let proxy: TestProxy;
const raws: RawClient[] = [];
const clients: pg.Client[] = [];
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  const cfg = demoConfigObject();
  // A wait of 20 s at most: a holder's pace is what would finish its messages within that (10 MB: 2.5 MB per 5 s).
  cfg.limits = {
    ...(cfg.limits as Record<string, unknown>),
    memory_budget_bytes: 64 * MiB,
    memory_wait_ms: 20_000,
  };
  proxy = await startTestProxy(cfg);
}, 60_000);

afterAll(async () => {
  for (const t of timers) clearInterval(t);
  for (const r of raws) r.end();
  for (const c of clients) await c.end().catch(() => undefined);
  await proxy?.close();
});

/** Resolves with `p`'s value, or with 'timeout' after `ms`. */
function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);
}

/**
 * Waits (bounded) until the attacker's 10 MB message holds its 40 MB of the budget: bob's row must
 * meet the hold, not race it (a fixed sleep let a loaded machine's bob go first, proving nothing).
 */
async function untilHeld(): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (proxy.server.stats().memory.inUse < 40_000_000) {
    if (Date.now() > deadline) throw new Error('the attacker never held its 40 MB of the budget');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** alice logged in through a raw client (the attacker); the test ends it. */
async function attackerLogin(): Promise<RawClient> {
  const attacker = await RawClient.connect(proxy.port);
  raws.push(attacker);
  await attacker.login({ user: 'alice', database: 'demo' }, 'alice');
  return attacker;
}

/**
 * bob's own 8 MB row (32 MB held) fits only beside what the attacker holds (40 MB) once the
 * attacker's hold is ended: its length within 30 s, or 'timeout'. Then the attacker's connection closes.
 */
async function bobsRowThenAttackerClosed(attacker: RawClient): Promise<void> {
  const bob = await proxy.client('bob');
  clients.push(bob);
  const r = await within(
    bob.query("select length(repeat('y', 8000000)) as n, repeat('y', 8000000) as pad"),
    // Past limits.memory_wait_ms (20 s, when bob's wait would end in 53200): the eviction's timing
    // is the product's, a loaded machine's seconds included, not this bound's.
    30_000,
  );
  expect(r === 'timeout' ? 'timeout' : (r.rows[0] as { n: number }).n).toBe(8_000_000);
  // The attacker's session was ended (FATAL 53200, its sockets destroyed with what they buffered).
  // Its trickle stops first: what the kernel still buffers for it comes before the close, and a
  // chunk a second of it took longer than the wait below (seen on a loaded machine).
  for (const t of timers.splice(0)) clearInterval(t);
  attacker.socket.removeAllListeners('data');
  attacker.socket.resume();
  await attacker.until(() => attacker.closed, 10_000);
  expect(attacker.closed).toBe(true);
}

describe('a client that stops reading a large row', () => {
  test('does not stall another session’s large row (budget 64 MiB, 10 MB held ×4)', {
    timeout: 60_000,
  }, async () => {
    // alice asks for a 10 MB row and never reads it: its held cost (40 MB) stays taken while the
    // proxy cannot hand it to her socket.
    const attacker = await attackerLogin();
    attacker.socket.pause();
    attacker.write(query("select repeat('x', 10000000) as pad"));
    await untilHeld();
    await bobsRowThenAttackerClosed(attacker);
  });

  test('a client that announces a large message and sends no more of it does not stall another session', {
    timeout: 60_000,
  }, async () => {
    // A Query header claiming 10 MB (40 MB held from its header on) and a few bytes of it, then nothing.
    const attacker = await attackerLogin();
    const header = Buffer.alloc(5);
    header.write('Q', 0);
    header.writeInt32BE(10_000_004, 1);
    attacker.write(Buffer.concat([header, Buffer.from("select '")]));
    await untilHeld();
    await bobsRowThenAttackerClosed(attacker);
  });
});

// Attack finding (fixed): any byte counted as progress, so one logged-in client announcing a 10 MB
// message (40 MB held) and sending it at a byte a second, or reading a 10 MB row a chunk a second,
// held its share for days, and every other session's large messages waited out
// limits.memory_wait_ms. Now a holder moves only at the pace that would finish what it holds
// within that wait (src/proxy/message-hold.ts).
describe('a client that moves a held message at a trickle', () => {
  test('sending a 10 MB message a byte a second does not stall another session', {
    timeout: 60_000,
  }, async () => {
    const attacker = await attackerLogin();
    const header = Buffer.alloc(5);
    header.write('Q', 0);
    header.writeInt32BE(10_000_004, 1);
    attacker.write(Buffer.concat([header, Buffer.from("select '")]));
    timers.push(setInterval(() => attacker.closed || attacker.write(Buffer.from('x')), 1000));
    await untilHeld();
    await bobsRowThenAttackerClosed(attacker);
  });

  test('reading a 10 MB row a chunk a second does not stall another session', {
    timeout: 60_000,
  }, async () => {
    const attacker = await attackerLogin();
    attacker.socket.pause();
    attacker.write(query("select repeat('x', 10000000) as pad"));
    // One chunk a second: resumed until the next 'data', then paused again.
    timers.push(
      setInterval(() => {
        if (attacker.closed) return;
        attacker.socket.once('data', () => attacker.socket.pause());
        attacker.socket.resume();
      }, 1000),
    );
    await untilHeld();
    await bobsRowThenAttackerClosed(attacker);
  });
});

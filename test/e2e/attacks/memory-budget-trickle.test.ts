// A client that trickles a large message in, or reads a large row a few bytes at a time, must not hold the shared memory budget from every other session.
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { query } from '../../../src/wire/frontend-encode.js';
import { demoConfigObject, startTestProxy, type TestProxy } from '../../helpers/proxy.js';
import { RawClient } from '../../helpers/raw-client.js';

// Attack finding (fixed): the budget ended a session holding budget others waited for only when its
// client made no progress at all; one byte every second counted as progress, so a single logged-in
// client announcing a 10 MB message (40 MB held) and sending it at 1 byte/s held it for days, and
// every other session's large messages waited out limits.memory_wait_ms and failed with 53200.
// Now a holder moves only at a pace that would finish what it holds within that wait.
const MiB = 2 ** 20;
let proxy: TestProxy;
const raws: RawClient[] = [];
const clients: pg.Client[] = [];
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  const cfg = demoConfigObject();
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

function within<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  return Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);
}

async function attackerLogin(): Promise<RawClient> {
  const attacker = await RawClient.connect(proxy.port);
  raws.push(attacker);
  await attacker.login({ user: 'alice', database: 'demo' }, 'alice');
  return attacker;
}

/** bob's 8 MB row (32 MB held) fits beside the attacker's 40 MB only once the attacker's hold ends. */
async function bobsRowPasses(attacker: RawClient): Promise<void> {
  const bob = await proxy.client('bob');
  clients.push(bob);
  const r = await within(
    bob.query("select length(repeat('y', 8000000)) as n, repeat('y', 8000000) as pad"),
    15_000,
  ).catch((e: Error) => e.message);
  expect(typeof r === 'object' ? (r.rows[0] as { n: number }).n : r).toBe(8_000_000);
  attacker.socket.resume();
  await attacker.until(() => attacker.closed, 10_000);
  expect(attacker.closed).toBe(true);
}

describe('a client that moves a held message at a trickle', () => {
  test('sending a 10 MB message one byte a second does not stall another session', {
    timeout: 60_000,
  }, async () => {
    const attacker = await attackerLogin();
    const header = Buffer.alloc(5);
    header.write('Q', 0);
    header.writeInt32BE(10_000_004, 1);
    attacker.write(Buffer.concat([header, Buffer.from("select '")]));
    timers.push(
      setInterval(() => {
        if (!attacker.closed) attacker.write(Buffer.from('x'));
      }, 1000),
    );
    await new Promise((r) => setTimeout(r, 1500));
    await bobsRowPasses(attacker);
  });

  test('reading a 10 MB row a chunk a second does not stall another session', {
    timeout: 60_000,
  }, async () => {
    const attacker = await attackerLogin();
    attacker.socket.pause();
    attacker.write(query("select repeat('x', 10000000) as pad"));
    // One chunk a second: resume until the next 'data', then pause again.
    timers.push(
      setInterval(() => {
        if (attacker.closed) return;
        attacker.socket.once('data', () => attacker.socket.pause());
        attacker.socket.resume();
      }, 1000),
    );
    await new Promise((r) => setTimeout(r, 1500));
    await bobsRowPasses(attacker);
  });
});

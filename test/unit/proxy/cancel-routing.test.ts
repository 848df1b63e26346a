// Cancel keys name their owner (fleet slot, worker) and carry a forwarding TTL; a CancelRequest is served here, handed to a sibling, or forwarded once per hop at most three times.
import net from 'node:net';
import { describe, expect, test } from 'vitest';
import {
  decrementTtl,
  encodeProcessId,
  keyOwner,
  keyTtl,
  MAX_SLOT,
  MAX_WORKER,
} from '../../../src/proxy/cancel-key.js';
import { CancelRegistry } from '../../../src/proxy/cancel-registry.js';
import { MAX_FORWARDS_IN_FLIGHT, routeCancel } from '../../../src/proxy/cancel-routing.js';

/** A TCP listener that records each 16-byte CancelRequest it gets as [processId, secretKey]. */
async function cancelSink(): Promise<{ address: string; got: [number, number][]; close(): void }> {
  const got: [number, number][] = [];
  const server = net.createServer((s) => {
    const chunks: Buffer[] = [];
    s.on('data', (d) => {
      chunks.push(d);
      const b = Buffer.concat(chunks);
      if (b.length < 16) return;
      expect(b.length).toBe(16);
      expect([b.readInt32BE(0), b.readInt32BE(4)]).toEqual([16, 80877102]);
      got.push([b.readInt32BE(8), b.readInt32BE(12)]);
      s.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return { address: `127.0.0.1:${port}`, got, close: () => server.close() };
}

describe('cancel key layout', () => {
  test('the owner and a TTL of 3 round-trip through a positive process ID', () => {
    for (const owner of [
      { slot: 0, worker: 0 },
      { slot: 1, worker: 0 },
      { slot: MAX_SLOT, worker: MAX_WORKER },
      { slot: 17, worker: 3 },
    ]) {
      const pid = encodeProcessId(owner, 0xffff);
      expect(pid).toBeGreaterThan(0);
      expect(pid).toBeLessThanOrEqual(0x7fffffff);
      expect(keyOwner(pid)).toEqual(owner);
      expect(keyTtl(pid)).toBe(3);
      const once = decrementTtl(pid);
      expect(keyOwner(once)).toEqual(owner);
      expect(keyTtl(once)).toBe(2);
      expect(keyTtl(decrementTtl(decrementTtl(once)))).toBe(0);
      expect(once & 0xffff).toBe(0xffff);
    }
    expect(() => encodeProcessId({ slot: 256, worker: 0 }, 1)).toThrow(RangeError);
    expect(() => encodeProcessId({ slot: 1, worker: 32 }, 1)).toThrow(RangeError);
  });

  test('a registry stamps its owner on every key, finds it whatever the TTL, and compares the whole secret', () => {
    const reg = new CancelRegistry(() => ({ slot: 9, worker: 2 }));
    const target = { processId: 1, secretKey: 2, cancel: async () => {} };
    const key = reg.issue(target);
    expect(keyOwner(key.processId)).toEqual({ slot: 9, worker: 2 });
    expect(keyTtl(key.processId)).toBe(3);
    expect(reg.find(key.processId, key.secretKey)).toBe(target);
    expect(reg.find(decrementTtl(key.processId), key.secretKey)).toBe(target);
    for (const bit of [0, 1, 2, 31])
      expect(reg.find(key.processId, key.secretKey ^ (1 << bit))).toBeUndefined();
    expect(reg.find(key.processId ^ 1, key.secretKey)).toBeUndefined();
  });
});

describe('routeCancel', () => {
  test('a key of this process is canceled here; a sibling worker gets its own; an unknown key of this process is dropped', async () => {
    const reg = new CancelRegistry(() => ({ slot: 4, worker: 0 }));
    let canceled = 0;
    const key = reg.issue({ processId: 1, secretKey: 2, cancel: async () => void canceled++ });
    const handed: number[] = [];
    const routes = {
      toWorker: (w: number) => {
        handed.push(w);
        return true;
      },
    };
    expect(await routeCancel(reg, routes, key.processId, key.secretKey)).toBe('local');
    expect(canceled).toBe(1);
    const sibling = encodeProcessId({ slot: 4, worker: 3 }, 77);
    expect(await routeCancel(reg, routes, sibling, 0x1234)).toBe('worker');
    expect(handed).toEqual([3]);
    const mine = encodeProcessId({ slot: 4, worker: 0 }, 78);
    expect(await routeCancel(reg, routes, mine, 0x1234)).toBe('unknown');
    // A wrong secret for a key held here is not routed anywhere either.
    expect(await routeCancel(reg, routes, key.processId, key.secretKey ^ 8)).toBe('unknown');
    expect(canceled).toBe(1);
  });

  test('a key of another slot is forwarded to the address the store gives, TTL lowered; never with TTL 0 nor to itself', async () => {
    const sink = await cancelSink();
    try {
      const reg = new CancelRegistry(() => ({ slot: 1, worker: 0 }));
      const asked: number[] = [];
      const routes = {
        peerAddress: async (slot: number) => {
          asked.push(slot);
          return slot === 2 ? sink.address : undefined;
        },
        selfAddress: () => '127.0.0.1:1',
      };
      const pid = encodeProcessId({ slot: 2, worker: 1 }, 1234);
      const secret = 0x0badf00d;
      expect(await routeCancel(reg, routes, pid, secret)).toBe('peer');
      expect(sink.got).toEqual([[decrementTtl(pid), secret]]);
      const spent = decrementTtl(decrementTtl(decrementTtl(pid)));
      expect(await routeCancel(reg, routes, spent, secret)).toBe('ttl-exhausted');
      expect(await routeCancel(reg, routes, encodeProcessId({ slot: 3, worker: 0 }, 5), secret)).toBe(
        'no-peer',
      );
      // A key of a process outside any fleet (slot 0) is never forwarded.
      expect(await routeCancel(reg, routes, encodeProcessId({ slot: 0, worker: 0 }, 5), secret)).toBe(
        'no-peer',
      );
      expect(asked).toEqual([2, 3]);
      const self = { peerAddress: async () => '127.0.0.1:1', selfAddress: () => '127.0.0.1:1' };
      expect(await routeCancel(reg, self, pid, secret)).toBe('no-peer');
      expect(sink.got.length).toBe(1);
    } finally {
      sink.close();
    }
  });

  test(`at most ${MAX_FORWARDS_IN_FLIGHT} forwards at once: a flood of forged keys for a live peer is dropped beyond it`, async () => {
    // A peer that accepts and never closes: each forward stays in flight until its timeout.
    const held: net.Socket[] = [];
    const server = net.createServer((sock) => held.push(sock));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    try {
      const reg = new CancelRegistry(() => ({ slot: 1, worker: 0 }));
      const routes = { peerAddress: async () => `127.0.0.1:${port}`, selfAddress: () => '127.0.0.1:1' };
      const pid = encodeProcessId({ slot: 2, worker: 0 }, 77);
      const flood = Array.from({ length: MAX_FORWARDS_IN_FLIGHT + 20 }, (_, i) =>
        routeCancel(reg, routes, pid, i),
      );
      const outcomes = await Promise.all(flood);
      expect(outcomes.filter((o) => o === 'busy').length).toBe(20);
      expect(outcomes.filter((o) => o === 'peer').length).toBe(MAX_FORWARDS_IN_FLIGHT);
      expect(held.length).toBeLessThanOrEqual(MAX_FORWARDS_IN_FLIGHT);
      // Once they are done, forwarding works again.
      const sink = await cancelSink();
      try {
        expect(await routeCancel(reg, { ...routes, peerAddress: async () => sink.address }, pid, 1)).toBe(
          'peer',
        );
      } finally {
        sink.close();
      }
    } finally {
      for (const sock of held) sock.destroy();
      server.close();
    }
  }, 20_000);

  test('instances whose fleet table points back at each other stop after three forwards', async () => {
    // Two "instances" that each believe the key's slot lives at the other: a loop the TTL ends.
    const hops: number[] = [];
    const servers: net.Server[] = [];
    const addresses: string[] = [];
    for (const i of [0, 1]) {
      const reg = new CancelRegistry(() => ({ slot: 10 + i, worker: 0 }));
      const server = net.createServer((s) => {
        const chunks: Buffer[] = [];
        s.on('data', async (d) => {
          chunks.push(d);
          const b = Buffer.concat(chunks);
          if (b.length < 16) return;
          hops.push(keyTtl(b.readInt32BE(8)));
          await routeCancel(
            reg,
            { peerAddress: async () => addresses[1 - i], selfAddress: () => addresses[i] },
            b.readInt32BE(8),
            b.readInt32BE(12),
          );
          s.end();
        });
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      servers.push(server);
      addresses.push(`127.0.0.1:${(server.address() as net.AddressInfo).port}`);
    }
    try {
      const start = new CancelRegistry(() => ({ slot: 12, worker: 0 }));
      const outcome = await routeCancel(
        start,
        { peerAddress: async () => addresses[0] },
        encodeProcessId({ slot: 99, worker: 0 }, 1),
        42,
      );
      expect(outcome).toBe('peer');
      expect(hops).toEqual([2, 1, 0]);
    } finally {
      for (const s of servers) s.close();
    }
  });
});

// CancelRequests are served without a login: a flood of forged keys naming another fleet slot costs the store one lookup per slot and second, not one each.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { ADDRESS_REUSE_MS, FleetDirectory } from '../../../src/policy/fleet-instances.js';
import { encodeProcessId } from '../../../src/proxy/cancel-key.js';
import { CancelRegistry } from '../../../src/proxy/cancel-registry.js';
import { MAX_FORWARDS_IN_FLIGHT, routeCancel } from '../../../src/proxy/cancel-routing.js';
import { createDemoStore, type StoreDatabase } from '../../helpers/policy-store-db.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-cancel-flood-'));
let db: StoreDatabase;
let directory: FleetDirectory;

beforeAll(async () => {
  db = (await createDemoStore(dir)).store;
  directory = FleetDirectory.open(db.url);
}, 120_000);
afterAll(async () => {
  await directory?.close();
  await db?.drop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a flood of forged CancelRequests naming another slot', () => {
  test('1000 at once cost one store query; a lookup after the reuse window asks again', async () => {
    const query = vi.spyOn(pg.Pool.prototype, 'query');
    try {
      const registry = new CancelRegistry(() => ({ slot: 1, worker: 0 }));
      const routes = { peerAddress: (s: number) => directory.addressOf(s), selfAddress: () => '127.0.0.1:1' };
      // Slot 7 holds no live instance: the first MAX_FORWARDS_IN_FLIGHT are dropped ('no-peer')
      // after their one shared lookup, the rest at once ('busy': that many forwards are under way).
      const outcomes = await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          routeCancel(registry, routes, encodeProcessId({ slot: 7, worker: 0 }, (i % 60000) + 1), i),
        ),
      );
      expect(outcomes.filter((o) => o === 'no-peer').length).toBe(MAX_FORWARDS_IN_FLIGHT);
      expect(outcomes.filter((o) => o === 'busy').length).toBe(1000 - MAX_FORWARDS_IN_FLIGHT);
      expect(query.mock.calls.length).toBe(1);
      await new Promise((r) => setTimeout(r, ADDRESS_REUSE_MS + 100));
      await directory.addressOf(7);
      expect(query.mock.calls.length).toBe(2);
    } finally {
      query.mockRestore();
    }
  });
});

// The embedded PostgreSQL's port choice: a preferred port (the demo's 6433) when free, another when it is taken or lost.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, test } from 'vitest';
import { type EmbeddedServer, freePort, startEmbeddedPostgres } from '../../src/embedded/postgres.js';

const started: EmbeddedServer[] = [];
const bases: string[] = [];

function dataDir(): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'pgwarden-port-'));
  fs.chmodSync(base, 0o755);
  bases.push(base);
  return path.join(base, 'data');
}

async function selectOne(server: EmbeddedServer): Promise<number> {
  const c = new pg.Client({
    host: server.host,
    port: server.port,
    user: server.superuser,
    password: server.superuserPassword,
    database: 'postgres',
  });
  await c.connect();
  try {
    return (await c.query<{ n: number }>('select 1 as n')).rows[0]?.n ?? 0;
  } finally {
    await c.end();
  }
}

afterAll(async () => {
  await Promise.all(started.map((s) => s.stop().catch(() => {})));
  for (const b of bases) fs.rmSync(b, { recursive: true, force: true });
});

describe('startEmbeddedPostgres with a preferred port', () => {
  test('a preferred port taken after it was found free (while initdb runs) is given up for a free one', async () => {
    // The race two demos, or a demo and a test file, run into: the port is free when chosen and
    // bound by someone else before the postmaster binds it. initdb's first log line comes after
    // the choice and before the postmaster starts, so the port is taken right then.
    const preferred = await freePort();
    const holder = net.createServer();
    let taken: Promise<void> | undefined;
    const s = await startEmbeddedPostgres({
      dataDir: dataDir(),
      persistent: false,
      preferredPort: preferred,
      onLog: () => {
        taken ??= new Promise((resolve) => holder.listen(preferred, '127.0.0.1', () => resolve()));
      },
    });
    started.push(s);
    try {
      await taken;
      expect(holder.listening).toBe(true);
      expect(s.port).not.toBe(preferred);
      expect(await selectOne(s)).toBe(1);
    } finally {
      holder.close();
    }
  }, 180_000);

  test('a preferred port another process holds is passed over for a free one', async () => {
    const holder = net.createServer();
    const held = await new Promise<number>((resolve) =>
      holder.listen(0, '127.0.0.1', () => resolve((holder.address() as net.AddressInfo).port)),
    );
    try {
      const s = await startEmbeddedPostgres({ dataDir: dataDir(), persistent: false, preferredPort: held });
      started.push(s);
      expect(s.port).not.toBe(held);
      expect(await selectOne(s)).toBe(1);
    } finally {
      holder.close();
    }
  }, 180_000);
});

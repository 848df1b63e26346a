// A client that sends and never reads: pgwarden stops reading it once its answers are unread (the admin console, refusals, results), so memory stays bounded.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { wireConsole } from '../../../src/admin/wire-console.js';
import { startTestProxy, type TestProxy } from '../../helpers/proxy.js';

const run = promisify(execFile);
const HELPERS = path.join(import.meta.dirname, '../../helpers');

let proxy: TestProxy;

beforeAll(async () => {
  proxy = await startTestProxy(undefined, { proxy: { console: wireConsole } });
}, 60_000);

afterAll(async () => {
  await proxy?.close();
});

/**
 * Runs a client in its own process (test/helpers/flood-client.ts) that logs in as `user` to
 * `database`, stops reading, and writes `mb` MB of the Query `sql` repeated; resolves with how many
 * bytes the proxy took off its socket once it stopped taking more. Loopback socket buffers hold a few
 * MB; the rest must stay queued in the client when the proxy honours backpressure.
 */
async function taken(user: string, database: string, sql: string, mb: number, read = false) {
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      path.join(HELPERS, 'flood-client.ts'),
      String(proxy.port),
      user,
      database,
      sql,
      String(mb),
      read ? 'read' : 'no-read',
    ],
    { timeout: 110_000, maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout.trim()) as {
    written: number;
    taken: number;
    closed: boolean;
    sent: number;
    answered: number;
  };
}

describe('a client that never reads its answers', () => {
  test('the admin console stops reading it (SHOW HELP: 15 bytes in, ~300 out)', {
    timeout: 120_000,
  }, async () => {
    // alice holds no app-level action: SHOW HELP is what anyone logged in may run.
    const r = await taken('alice', 'pgwarden', 'SHOW HELP', 48);
    expect(r.closed).toBe(false);
    // Without backpressure the proxy reads all 48 MB and queues ~1 GB of NOTICEs for a reader that never comes.
    expect(r.taken).toBeLessThan(24 << 20);
  });

  test('the admin console stops reading it (a 64 kB word echoed in each syntax error)', {
    timeout: 120_000,
  }, async () => {
    const r = await taken('alice', 'pgwarden', 'x'.repeat(65_536), 48, true);
    expect(r.taken).toBeLessThan(24 << 20);
    // Once the client reads, every one of its 768 commands is answered (42601) and the session goes on.
    expect(r).toMatchObject({ closed: false, sent: 768, answered: 768 });
  });

  test('a database session stops reading it (refusals answered by pgwarden)', {
    timeout: 120_000,
  }, async () => {
    const r = await taken('alice', 'demo', "select ssn = 'x' from users", 48);
    expect(r.taken).toBeLessThan(24 << 20);
  });

  test('a database session stops reading it (rows from upstream)', { timeout: 120_000 }, async () => {
    const r = await taken('alice', 'demo', 'select id, name from users', 48);
    expect(r.taken).toBeLessThan(24 << 20);
  });
});

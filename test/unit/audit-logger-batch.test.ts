// The audit logger's batch: lines reach the file 64 KiB at a time (or at a flush), not 8 KiB at a time.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDIT_BATCH_UNITS, makeAuditLogger } from '../../src/logger.js';

const sizeOf = (p: string): number => (fs.existsSync(p) ? fs.statSync(p).size : 0);

async function until(ok: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('makeAuditLogger batching', () => {
  it('holds lines until they add up to AUDIT_BATCH_UNITS (64 KiB), then writes them together', async () => {
    expect(AUDIT_BATCH_UNITS).toBe(64 * 1024);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pgw-audit-batch-'));
    const file = path.join(dir, 'audit.log');
    const audit = makeAuditLogger({ file, keep: 1 }, { flushMs: 60_000 });
    try {
      const sql = 'SELECT abalance FROM pgbench_accounts WHERE aid = $1'.padEnd(250, ' ');
      let lines = 0;
      // About 300 units a line: well past the old 8 KiB batch, short of 64 KiB.
      while (lines * 320 < AUDIT_BATCH_UNITS / 2) {
        audit.logger.info({ audit: true, kind: 'SELECT', sql, decision: 'allowed' }, 'statement');
        lines++;
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(sizeOf(file)).toBe(0);
      while (sizeOf(file) === 0 && lines < 10_000) {
        audit.logger.info({ audit: true, kind: 'SELECT', sql, decision: 'allowed' }, 'statement');
        lines++;
        if (lines % 50 === 0) await new Promise((r) => setTimeout(r, 5));
      }
      await until(() => sizeOf(file) >= AUDIT_BATCH_UNITS);
      const written = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
      expect(written.length).toBeGreaterThan(AUDIT_BATCH_UNITS / 400);
      expect(JSON.parse(written[0] as string)).toMatchObject({
        audit: true,
        kind: 'SELECT',
        decision: 'allowed',
      });
    } finally {
      audit.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

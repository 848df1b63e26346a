// `pgwarden mcp` with `audit.file` and `log.file`: every audit line (the tools' and the proxy's) in the audit file, the process log in its file, both reopened on SIGHUP.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { waitForFileText } from '../../helpers/audit-file.js';
import {
  callTool,
  connectStdio,
  KEY_IDS,
  mcpConfigObject,
  type StdioSession,
  TOKENS,
  writeConfig,
} from './mcp-harness.js';

const file = writeConfig({ ...mcpConfigObject(), audit: { file: 'audit.jsonl' }, log: { file: 'mcp.log' } });
const dir = path.dirname(file);
const auditFile = path.join(dir, 'audit.jsonl');
const logFile = path.join(dir, 'mcp.log');

const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('pgwarden mcp with audit.file and log.file', () => {
  let analyst: StdioSession;
  beforeAll(async () => {
    analyst = await connectStdio(file, TOKENS.analyst);
  });
  afterAll(async () => {
    await analyst?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a tool call’s audit line and its statement’s go to the audit file, not to stderr; the process log to the log file', async () => {
    const r = await callTool(analyst.client, 'execute_query', {
      database: 'demo',
      sql: 'SELECT id, ssn AS audit_file_probe FROM users ORDER BY id LIMIT 1',
    });
    expect(r.isError, r.text).toBeFalsy();
    expect(JSON.parse(r.text)).toEqual([{ id: 1, audit_file_probe: '*****' }]);
    const audit = lines(await waitForFileText(auditFile, '"event":"mcp-tool"'));
    await waitForFileText(auditFile, 'audit_file_probe');
    const all = lines(fs.readFileSync(auditFile, 'utf8'));
    expect(audit.find((l) => l.event === 'mcp-tool')).toMatchObject({
      audit: true,
      identity: KEY_IDS.analyst,
      tool: 'execute_query',
      transport: 'stdio',
    });
    // The proxy's own line of the statement, with its decision and masks.
    expect(
      all.find((l) => l.event !== 'mcp-tool' && String(l.sql).includes('audit_file_probe')),
    ).toMatchObject({ audit: true, identity: KEY_IDS.analyst });
    // Only audit lines in the audit file; the process log is in its own file; stderr has neither.
    expect(all.every((l) => l.audit === true)).toBe(true);
    const log = lines(await waitForFileText(logFile, 'mcp-listening'));
    expect(log.some((l) => l.audit === true)).toBe(false);
    expect(analyst.logs.lines.filter((l) => l.audit === true || l.event === 'mcp-listening')).toEqual([]);
  });

  test('SIGHUP reopens the audit file at its path (logrotate: rename, then SIGHUP)', async () => {
    await waitForFileText(auditFile, '"event":"mcp-tool"');
    fs.renameSync(auditFile, `${auditFile}.1`);
    const pid = analyst.pid();
    expect(pid).toBeGreaterThan(0);
    process.kill(pid as number, 'SIGHUP');
    await waitForFileText(logFile, '"event":"reload"');
    await callTool(analyst.client, 'execute_query', {
      database: 'demo',
      sql: 'SELECT 1 AS after_reopen_probe',
    });
    await waitForFileText(auditFile, 'after_reopen_probe');
    expect(fs.readFileSync(`${auditFile}.1`, 'utf8')).not.toContain('after_reopen_probe');
  });
});

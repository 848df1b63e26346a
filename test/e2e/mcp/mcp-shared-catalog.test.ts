// list_tables and describe_table from the shared catalog: outputs as before for every kind of key, DDL seen at once, no catalog re-read per call.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, test } from 'vitest';
import { createScramVerifier } from '../../../src/auth/scram-verifier.js';
import { ensureDemoDatabase } from '../../../src/embedded/demo.js';
import { superuserUrl } from '../../helpers/policy-store-db.js';
import {
  callTool,
  connectHttp,
  type HttpServerChild,
  mcpConfigObject,
  startHttpChild,
  TOKENS,
  writeConfig,
} from './mcp-harness.js';

/**
 * What list_tables and describe_table answered for each key before they read the shared catalog
 * (recorded by this test with PGWARDEN_RECORD_MCP_OUTPUTS=1 on the code that re-read the catalog
 * through the proxy on every call); the test requires the same answers now.
 */
const OUTPUTS_FILE = path.join(import.meta.dirname, 'mcp-catalog-outputs.json');
const DBA_TOKEN = 'pgwt_dba-test-token';

/** The demo tables plus a second schema, a view over a hidden column and a generated column over one. */
const EXTRAS = `
CREATE SCHEMA extra;
CREATE TABLE extra.things (
  id int PRIMARY KEY, label text UNIQUE, owner int REFERENCES public.users, code text,
  CONSTRAINT things_code_label UNIQUE (code, label));
CREATE VIEW public.user_contacts AS SELECT id, name, email FROM public.users;
ALTER TABLE public.users ADD COLUMN email_domain text GENERATED ALWAYS AS (split_part(email, '@', 2)) STORED;
CREATE SEQUENCE public.ticket_seq;`;

const dbName = `mcp_catalog_${crypto.randomBytes(4).toString('hex')}`;
let file: string;
let server: HttpServerChild;
const keys: Record<'dba' | 'analyst' | 'narrow', Client> = {} as never;

beforeAll(async () => {
  const { host, port, superuser, superuserPassword } = inject('pg');
  await ensureDemoDatabase(
    { host, port, superuser, superuserPassword, dataDir: '', stop: async () => {} },
    dbName,
  );
  const owner = new pg.Client({
    host,
    port,
    user: 'pgwarden_app',
    password: 'pgwarden-app-demo',
    database: dbName,
  });
  await owner.connect();
  await owner.query(EXTRAS);
  await owner.end();
  const cfg = mcpConfigObject();
  const dbs = cfg.databases as Record<string, { url: string }>;
  dbs.demo = { url: dbs.demo!.url.replace(/\/demo$/, `/${dbName}`) };
  (cfg.api_keys as unknown[]).push({
    id: 'pgw_dba01',
    scram: createScramVerifier(DBA_TOKEN, { iterations: 4096 }),
    roles: ['dba'],
  });
  file = writeConfig(cfg);
  server = await startHttpChild(file, { PGWARDEN_LOG_LEVEL: 'debug' });
  [keys.dba, keys.analyst, keys.narrow] = await Promise.all([
    connectHttp(server.url, DBA_TOKEN),
    connectHttp(server.url, TOKENS.analyst),
    connectHttp(server.url, TOKENS.narrow),
  ]);
});

afterAll(async () => {
  await Promise.all(Object.values(keys).map((c) => c?.close()));
  await server?.stop();
  if (file) fs.rmSync(path.dirname(file), { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: superuserUrl('postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
});

/** The calls whose answers are pinned, per key. */
const CALLS: readonly [string, Record<string, unknown>][] = [
  ['list_tables', { database: 'demo' }],
  ['list_tables', { database: 'demo', schema: 'public' }],
  ['list_tables', { database: 'demo', schema: 'extra' }],
  ['list_tables', { database: 'demo', schema: 'pg_catalog' }],
  ['list_tables', { database: 'other' }],
  ['list_tables', { database: 'nosuchdb' }],
  ['describe_table', { database: 'demo', table: 'users' }],
  ['describe_table', { database: 'demo', table: 'orders', schema: 'public' }],
  ['describe_table', { database: 'demo', table: 'orgs' }],
  ['describe_table', { database: 'demo', table: 'user_contacts' }],
  ['describe_table', { database: 'demo', table: 'things' }],
  ['describe_table', { database: 'demo', table: 'things', schema: 'extra' }],
  ['describe_table', { database: 'demo', table: 'ticket_seq' }],
  ['describe_table', { database: 'demo', table: 'pg_class', schema: 'pg_catalog' }],
  ['describe_table', { database: 'demo', table: 'nope' }],
  ['describe_table', { database: 'other', table: 'users' }],
];

async function answers(client: Client): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [tool, args] of CALLS) {
    const r = await callTool(client, tool, args);
    out.push({
      tool,
      args,
      isError: r.isError ?? false,
      text: r.text,
      structured: r.structuredContent ?? null,
    });
  }
  return out;
}

test('list_tables and describe_table answer as before: a MANAGE key, a key with hidden columns, a key reading one table', async () => {
  const got = {
    dba: await answers(keys.dba),
    analyst: await answers(keys.analyst),
    narrow: await answers(keys.narrow),
  };
  if (process.env.PGWARDEN_RECORD_MCP_OUTPUTS === '1') {
    fs.writeFileSync(OUTPUTS_FILE, `${JSON.stringify(got, null, 2)}\n`);
    return;
  }
  const pinned = JSON.parse(fs.readFileSync(OUTPUTS_FILE, 'utf8')) as typeof got;
  expect(got.dba).toEqual(pinned.dba);
  expect(got.analyst).toEqual(pinned.analyst);
  expect(got.narrow).toEqual(pinned.narrow);
});

const tablesOf = async (client: Client): Promise<string[]> => {
  const r = await callTool(client, 'list_tables', { database: 'demo', schema: 'public' });
  expect(r.isError, r.text).toBeFalsy();
  return (r.structuredContent as { tables: { name: string }[] }).tables.map((t) => t.name);
};

test('DDL through the proxy is in the next list_tables and describe_table, for the key that ran it and for another', async () => {
  expect(await tablesOf(keys.analyst)).not.toContain('made_by_mcp');
  const made = await callTool(keys.dba, 'execute_statement', {
    database: 'demo',
    sql: 'CREATE TABLE public.made_by_mcp (id int PRIMARY KEY, secret text)',
  });
  expect(made.isError, made.text).toBeFalsy();
  expect(await tablesOf(keys.dba)).toContain('made_by_mcp');
  expect(await tablesOf(keys.analyst)).toContain('made_by_mcp');
  const d = await callTool(keys.analyst, 'describe_table', { database: 'demo', table: 'made_by_mcp' });
  expect(d.isError, d.text).toBeFalsy();
  expect((d.structuredContent as { columns: { name: string }[] }).columns.map((c) => c.name)).toEqual([
    'id',
    'secret',
  ]);
  const altered = await callTool(keys.dba, 'execute_statement', {
    database: 'demo',
    sql: 'ALTER TABLE public.made_by_mcp ADD COLUMN extra int UNIQUE',
  });
  expect(altered.isError, altered.text).toBeFalsy();
  const d2 = await callTool(keys.analyst, 'describe_table', { database: 'demo', table: 'made_by_mcp' });
  expect(d2.structuredContent).toMatchObject({
    columns: [{ name: 'id' }, { name: 'secret' }, { name: 'extra' }],
    unique: [{ name: 'made_by_mcp_extra_key', columns: ['extra'] }],
  });
  const dropped = await callTool(keys.dba, 'execute_statement', {
    database: 'demo',
    sql: 'DROP TABLE public.made_by_mcp',
  });
  expect(dropped.isError, dropped.text).toBeFalsy();
  expect(await tablesOf(keys.analyst)).not.toContain('made_by_mcp');
  const gone = await callTool(keys.analyst, 'describe_table', { database: 'demo', table: 'made_by_mcp' });
  expect(gone.isError).toBe(true);
  expect(gone.text).toContain('relation "made_by_mcp" does not exist');
});

/** A statement through the proxy that reads the system catalog (the per-call re-read did five). */
const readsCatalog = (l: Record<string, unknown>) =>
  l.audit === true &&
  typeof l.sql === 'string' &&
  /\bpg_(class|attribute|proc|namespace|constraint|type)\b/.test(l.sql);

test('a second list_tables and describe_table read no catalog: no catalog statement through the proxy, no shared read', async () => {
  let n = 0;
  /** Runs `tool` between two markers; returns the log lines written between them. */
  const between = async (tool: string, args: Record<string, unknown>) => {
    const marker = async () => {
      const sql = `SELECT ${++n} AS mcp_marker_${n}`;
      const r = await callTool(keys.analyst, 'execute_query', { database: 'demo', sql });
      expect(r.isError, r.text).toBeFalsy();
      const m = `mcp_marker_${n}`;
      await server.logs.waitFor(
        (l) => l.audit === true && String(l.sql).includes(m) && l.event !== 'mcp-tool',
      );
      return server.logs.lines.findIndex(
        (l) => l.audit === true && String(l.sql).includes(m) && l.event !== 'mcp-tool',
      );
    };
    const from = await marker();
    const r = await callTool(keys.analyst, tool, args);
    expect(r.isError, r.text).toBeFalsy();
    const to = await marker();
    return server.logs.lines.slice(from + 1, to);
  };
  // Warm: the first calls may read what is not read yet.
  await between('list_tables', { database: 'demo' });
  await between('describe_table', { database: 'demo', table: 'users' });
  // The shared reads are logged (at debug), so their absence below means something.
  expect(server.logs.lines.some((l) => l.event === 'catalog-read' && l.database === 'demo')).toBe(true);
  for (const [tool, args] of [
    ['list_tables', { database: 'demo' }],
    ['describe_table', { database: 'demo', table: 'users' }],
  ] as const) {
    const lines = await between(tool, args);
    expect(lines.filter((l) => l.event === 'mcp-tool' && l.tool === tool)).toHaveLength(1);
    expect(lines.filter(readsCatalog).map((l) => l.sql)).toEqual([]);
    expect(lines.filter((l) => l.event === 'catalog-read')).toEqual([]);
  }
});

// Admin API: workspace settings (workspace_settings), the policy history and the audit log (audit_read), check (workspace_roles).
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { checkJson } from '../policy/check-report.js';
import { checkReport } from '../policy/check-run.js';
import { editorDatabases } from '../policy/grant-limits.js';
import { workspaceSettingsSchema } from '../policy/policy-schema.js';
import { CatalogSource } from '../proxy/catalog-source.js';
import { HttpError } from './admin-http.js';
import { type AdminContext, callerOf, commitEdit, need, policyNow, versionOf } from './policy-edit.js';

const historyQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(50),
    before: z.coerce.number().int().min(1).optional(),
  })
  .strict();
const auditQuery = z
  .object({
    identity: z.string().optional(),
    database: z.string().optional(),
    decision: z.enum(['allowed', 'masked', 'refused']).optional(),
    /** A table (or view) name: statements whose text names it (as a word, in any case). */
    table: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'must be a table name')
      .optional(),
    since: z.string().datetime().optional(),
    until: z.string().datetime().optional(),
    admin: z.enum(['true', 'false']).optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    offset: z.coerce.number().int().min(0).default(0),
  })
  .strict();
const checkBody = z
  .object({
    user: z.string().min(1),
    role: z.string().min(1).optional(),
    database: z.string().min(1).optional(),
    sql: z
      .string()
      .min(1)
      .max(1 << 20),
  })
  .strict();

/** The audit file of the instance config (`audit.file`, relative to the config file); undefined when audit goes to the log. */
export function auditFileOf(ctx: AdminContext): string | undefined {
  const loaded = ctx.config();
  const f = loaded.config.audit.file;
  return f === undefined ? undefined : path.resolve(path.dirname(loaded.file), f);
}

/** The audit lines of `file` (JSON lines tagged `audit: true`), oldest first; unreadable lines skipped. */
export function readAuditLines(file: string): Record<string, unknown>[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      const l = JSON.parse(line) as Record<string, unknown>;
      if (l.audit === true) out.push(l);
    } catch {
      // a line being written, or not ours
    }
  }
  return out;
}

/** Registers settings, history, audit and check. */
export function workspaceRoutes(app: FastifyInstance, ctx: AdminContext): void {
  const settings = need(ctx, 'workspace_settings');
  const audit = need(ctx, 'audit_read');
  const roles = need(ctx, 'workspace_roles');
  const catalogs = new CatalogSource(60_000);

  app.get(
    '/api/settings',
    { preHandler: settings, schema: { tags: ['settings'], summary: 'workspace settings' } },
    async (_req, reply) => ({
      ...versionOf(ctx, reply),
      workspace: policyNow(ctx).workspace,
    }),
  );
  app.put<{ Body: z.infer<typeof workspaceSettingsSchema> }>(
    '/api/settings',
    {
      preHandler: settings,
      schema: {
        tags: ['settings'],
        summary: 'replace the workspace settings (If-Match)',
        body: workspaceSettingsSchema,
      },
    },
    async (req) =>
      commitEdit(ctx, req, {
        action: 'workspace_settings',
        summary: 'workspace settings',
        object: (p) => p.workspace,
        change: (p) => ({ ...p, workspace: req.body }),
      }),
  );

  app.get<{ Querystring: z.infer<typeof historyQuery> }>(
    '/api/history',
    {
      preHandler: audit,
      schema: {
        tags: ['audit'],
        summary: 'the versions of the policy, newest first',
        querystring: historyQuery,
      },
    },
    async (req) => {
      const store = ctx.source?.store;
      if (!store) return { versions: [] };
      return {
        versions: await store.history({
          limit: req.query.limit,
          ...(req.query.before ? { before: req.query.before } : {}),
        }),
      };
    },
  );

  app.get<{ Querystring: z.infer<typeof auditQuery> }>(
    '/api/audit',
    {
      preHandler: audit,
      schema: {
        tags: ['audit'],
        summary:
          "this instance's audit log, newest first, filtered by identity, database, decision, table and time",
        querystring: auditQuery,
      },
    },
    async (req) => {
      const file = auditFileOf(ctx);
      if (file === undefined)
        throw new HttpError(
          404,
          'no-audit-file',
          'this instance writes its audit lines to its log; set audit.file to read them here',
        );
      const q = req.query;
      const since = q.since ? Date.parse(q.since) : -Infinity;
      const until = q.until ? Date.parse(q.until) : Infinity;
      const names = q.table
        ? new RegExp(`(^|[^A-Za-z0-9_$])"?${q.table}"?($|[^A-Za-z0-9_$])`, 'i')
        : undefined;
      const lines = readAuditLines(file)
        .filter(
          (l) =>
            (q.identity === undefined || l.identity === q.identity || l.viewer === q.identity) &&
            (q.database === undefined || l.database === q.database) &&
            (q.decision === undefined || l.decision === q.decision) &&
            (names === undefined || (typeof l.sql === 'string' && names.test(l.sql))) &&
            (q.admin === undefined || (l.admin === true) === (q.admin === 'true')) &&
            typeof l.time === 'number' &&
            l.time >= since &&
            l.time <= until,
        )
        .reverse();
      return { total: lines.length, offset: q.offset, entries: lines.slice(q.offset, q.offset + q.limit) };
    },
  );

  app.post<{ Body: z.infer<typeof checkBody> }>(
    '/api/check',
    {
      preHandler: roles,
      schema: {
        tags: ['check'],
        summary: 'the verdict and lineage of a SQL string for a user, as `pgwarden check --json` gives it',
        body: checkBody,
      },
    },
    async (req) => {
      // Only analysed and decided, never run upstream; and only on the databases the caller may open
      // (another is answered as one the config does not list: its tables stay unnamed).
      const config = ctx.config().config;
      const r = await checkReport(
        { ...config, databases: editorDatabases(config, callerOf(req)) },
        {
          user: req.body.user,
          sql: req.body.sql,
          ...(req.body.role ? { role: req.body.role } : {}),
          ...(req.body.database ? { database: req.body.database } : {}),
        },
        { loadCatalog: (database, url) => catalogs.get(database, url) },
      );
      if ('usage' in r) throw new HttpError(422, 'invalid', r.usage);
      return checkJson(r);
    },
  );
}

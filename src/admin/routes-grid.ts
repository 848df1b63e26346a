// Admin API for the permission grid (workspace_roles): the live catalog tree of a database, and each cell's effective result with its deciding rule.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { gridVerdicts } from '../policy/effective-grid.js';
import { editorDatabases } from '../policy/grant-limits.js';
import { APP_ACTIONS, DATA_ACTIONS, permissionSchema } from '../policy/policy-schema.js';
import { describeRule } from '../policy/refusal-messages.js';
import { CatalogSource, CatalogUnavailable } from '../proxy/catalog-source.js';
import { HttpError } from './admin-http.js';
import { type AdminContext, callerOf, need } from './policy-edit.js';

const databaseParam = z.object({ database: z.string().min(1).max(63) }).strict();
const roleParam = z.object({ name: z.string().min(1).max(63) }).strict();
const level = z.string().min(1).max(63);
const gridScope = z
  .object({ database: level, schema: level.optional(), table: level.optional(), column: level.optional() })
  .strict()
  .refine(
    (s) =>
      (s.column === undefined || s.table !== undefined) && (s.table === undefined || s.schema !== undefined),
    {
      message: 'a column needs a table and a table needs a schema',
    },
  );
const effectiveBody = z
  .object({
    /** The role's rules as drafted (absent: as in force): the grid shows what saving would make. */
    permissions: z.array(permissionSchema).max(1000).optional(),
    scopes: z.array(gridScope).max(2000).default([]),
  })
  .strict();

/** Schemas a workspace's grid never lists: PostgreSQL's own. */
function systemSchema(name: string): boolean {
  return name === 'information_schema' || name.startsWith('pg_');
}

/** Registers GET /api/catalog, GET /api/catalog/:database and POST /api/roles/:name/effective. */
export function gridRoutes(app: FastifyInstance, ctx: AdminContext): void {
  const roles = need(ctx, 'workspace_roles');
  const catalogs = new CatalogSource(30_000);
  app.addHook('onClose', async () => catalogs.close());

  app.get(
    '/api/catalog',
    {
      preHandler: roles,
      schema: {
        tags: ['grid'],
        summary: "the databases of the config, by name, and the grid's actions (app-level and data)",
      },
    },
    async (req) => ({
      databases: Object.keys(editorDatabases(ctx.config().config, callerOf(req))),
      app_actions: APP_ACTIONS,
      actions: DATA_ACTIONS,
    }),
  );

  app.get<{ Params: z.infer<typeof databaseParam> }>(
    '/api/catalog/:database',
    {
      preHandler: roles,
      schema: {
        tags: ['grid'],
        summary: "a database's schemas, tables (tables, views, …) and columns, read from its live catalog",
        params: databaseParam,
      },
    },
    async (req) => {
      const db = req.params.database;
      // A database the caller may not open is answered as one the config does not list.
      const databases = editorDatabases(ctx.config().config, callerOf(req));
      const entry = Object.hasOwn(databases, db) ? databases[db] : undefined;
      if (!entry) throw new HttpError(404, 'not-found', `the config lists no database "${db}"`);
      let catalog: Awaited<ReturnType<CatalogSource['get']>>;
      try {
        catalog = await catalogs.get(db, entry.url);
      } catch (e) {
        throw new HttpError(
          503,
          'catalog-unavailable',
          e instanceof CatalogUnavailable ? e.message : `the catalog of "${db}" cannot be read now`,
        );
      }
      const schemas = new Map<
        string,
        { name: string; kind: string; columns: { name: string; type: string }[] }[]
      >();
      for (const ns of catalog.namespaces) if (!systemSchema(ns) && ns !== 'pgwarden') schemas.set(ns, []);
      for (const r of catalog.relations.values()) {
        if (r.kind === 'sequence') continue;
        const tables = schemas.get(r.schema);
        if (!tables) continue;
        tables.push({
          name: r.name,
          kind: r.kind,
          columns: r.columns.map((c) => ({ name: c.name, type: c.typeName })),
        });
      }
      return {
        database: db,
        schemas: [...schemas.entries()]
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([name, tables]) => ({ name, tables: tables.sort((a, b) => a.name.localeCompare(b.name)) })),
      };
    },
  );

  app.post<{ Params: z.infer<typeof roleParam>; Body: z.infer<typeof effectiveBody> }>(
    '/api/roles/:name/effective',
    {
      preHandler: roles,
      schema: {
        tags: ['grid'],
        summary:
          'the effective result of every app-level action and of each action on each scope for the role (with its drafted rules), and the deciding rule',
        params: roleParam,
        body: effectiveBody,
      },
    },
    async (req) => {
      const config = ctx.config().config;
      const name = req.params.name;
      const old = Object.hasOwn(config.roles, name) ? config.roles[name] : undefined;
      const draft = {
        description: old?.description,
        tenants: old?.tenants ?? [],
        permissions: req.body.permissions ?? old?.permissions ?? [],
      };
      const view = { ...config, roles: { ...config.roles, [name]: draft } };
      const g = gridVerdicts(view, [name], req.body.scopes);
      const text = (v: { granted: boolean; rule?: Parameters<typeof describeRule>[1] } | null) =>
        v === null
          ? null
          : {
              granted: v.granted,
              rule: v.rule ? `roles.${v.rule.role}.permissions[${v.rule.index}]` : null,
              text: v.rule ? describeRule(view, v.rule) : 'no rule (default deny)',
            };
      return {
        role: name,
        app: Object.fromEntries(Object.entries(g.app).map(([a, v]) => [a, text(v)])),
        rows: g.rows.map((r) => ({
          scope: r.scope,
          cells: Object.fromEntries(Object.entries(r.cells).map(([a, v]) => [a, text(v)])),
        })),
      };
    },
  );
}

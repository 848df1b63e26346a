// The MCP server's tools: list_databases, list_tables, describe_table, execute_query, execute_statement, explain_query.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '../policy/config-schema.js';
import type { KeyCheck, McpIdentity } from './api-key-auth.js';
import { summarizeDatabases } from './database-summary.js';
import type { ProxyPools } from './proxy-pools.js';
import {
  DEFAULT_MAX_ROWS,
  MAX_MAX_ROWS,
  runExplain,
  runReadQuery,
  runStatement,
  type SqlParam,
  withConnection,
} from './query-runner.js';
import {
  type CatalogSourceFn,
  describeTable,
  listTables,
  relationNamed,
  sharedCatalog,
} from './table-catalog.js';
import { auditToolCall } from './tool-audit.js';
import { ToolFailure, toolErrorResult, toToolFailure } from './tool-errors.js';

/** What the tools need: the config in force, the pools, the logger, and who is calling. */
export interface ToolContext {
  readonly config: () => Config;
  readonly pools: ProxyPools;
  readonly logger: Logger;
  readonly transport: 'stdio' | 'http';
  /**
   * Authenticates the caller for this call: stdio re-checks the key from `PGWARDEN_API_KEY`, HTTP
   * the request's bearer token (a key revoked by a reload, or expired, stops working mid-session).
   */
  readonly identity: () => KeyCheck;
  /** The server's version, reported in the MCP handshake. */
  readonly version: string;
  /** The proxy's shared catalog of a database (ProxyServer.catalog): list_tables and describe_table read it. */
  readonly catalog: CatalogSourceFn;
}

const database = z.string().min(1).describe('a database name, as list_databases gives it');
const sql = z.string().min(1).describe('exactly one SQL statement');
const params = z
  .array(z.union([z.string(), z.number(), z.boolean(), z.null()]))
  .optional()
  .describe('values for $1, $2, … (sent as text; the server infers their types)');

const column = z.object({ name: z.string(), type_oid: z.number().int() });
const rowsShape = {
  command: z.string(),
  columns: z.array(column),
  rows: z.array(z.record(z.unknown())),
  row_count: z.number().int(),
  truncated: z.boolean(),
};

/** Input and output schemas of every tool (JSON Schema on the wire, from these zod shapes). */
export const TOOL_SCHEMAS = {
  list_databases: {
    input: {},
    output: {
      databases: z.array(
        z.object({
          name: z.string(),
          summary: z.string(),
          rules: z.array(
            z.object({
              role: z.string(),
              effect: z.enum(['allow', 'deny']),
              actions: z.array(z.string()),
              scope: z.string(),
            }),
          ),
        }),
      ),
    },
  },
  list_tables: {
    input: { database, schema: z.string().min(1).optional().describe('only this schema') },
    output: {
      database: z.string(),
      tables: z.array(z.object({ schema: z.string(), name: z.string(), kind: z.string() })),
    },
  },
  describe_table: {
    input: {
      database,
      table: z.string().min(1).describe('the table or view name, exact (as stored: usually lower case)'),
      schema: z.string().min(1).optional().describe('its schema; default: the first on the search_path'),
    },
    output: {
      database: z.string(),
      schema: z.string(),
      table: z.string(),
      kind: z.string(),
      columns: z.array(
        z.object({
          name: z.string(),
          type: z.string(),
          nullable: z.boolean(),
          primary_key: z.boolean(),
          masked: z.boolean(),
          selectable: z.boolean(),
          note: z.string().optional(),
        }),
      ),
      primary_key: z.array(z.string()),
      unique: z.array(z.object({ name: z.string(), columns: z.array(z.string()) })),
      foreign_keys: z.array(
        z.object({
          name: z.string(),
          columns: z.array(z.string()),
          references: z.object({ schema: z.string(), table: z.string(), columns: z.array(z.string()) }),
        }),
      ),
    },
  },
  execute_query: {
    input: {
      database,
      sql,
      params,
      max_rows: z
        .number()
        .int()
        .min(1)
        .max(MAX_MAX_ROWS)
        .optional()
        .describe(`rows to return at most (default ${DEFAULT_MAX_ROWS}); more sets truncated`),
    },
    output: rowsShape,
  },
  execute_statement: {
    input: { database, sql, params },
    output: { ...rowsShape, affected: z.number().int().nullable() },
  },
  explain_query: {
    input: {
      database,
      sql,
      params,
      analyze: z.boolean().optional().describe('run it (EXPLAIN ANALYZE) to get actual times; default false'),
    },
    output: { plan: z.string() },
  },
} as const;

/** {@link TOOL_SCHEMAS} as zod objects, built once: the SDK would build them from the shapes for every McpServer, and the HTTP endpoint builds one per request. */
const TOOL_OBJECTS = Object.fromEntries(
  Object.entries(TOOL_SCHEMAS).map(([name, s]) => [
    name,
    { input: z.object(s.input), output: z.object(s.output) },
  ]),
) as {
  [K in keyof typeof TOOL_SCHEMAS]: {
    input: z.ZodObject<(typeof TOOL_SCHEMAS)[K]['input']>;
    output: z.ZodObject<(typeof TOOL_SCHEMAS)[K]['output']>;
  };
};

/** What a tool's body hands back on success. */
interface ToolOutput {
  readonly structured: Record<string, unknown>;
  readonly text: string;
  readonly rows?: number;
  readonly truncated?: boolean;
}

/** What the audit line of a call names. */
interface CallInfo {
  readonly database?: string;
  readonly sql?: string;
}

function json(value: unknown): string {
  return JSON.stringify(value);
}

let validator: AjvJsonSchemaValidator | undefined;

/**
 * One JSON Schema validator for every McpServer of the process (the SDK would build an Ajv instance
 * per server, milliseconds each, and the HTTP endpoint builds a server per request). The servers only
 * use it for elicitation schemas, which pgwarden never sends; sharing it shares nothing of a caller.
 */
function sharedValidator(): AjvJsonSchemaValidator {
  validator ??= new AjvJsonSchemaValidator();
  return validator;
}

/**
 * Builds an McpServer with the six tools of issue 10 for `ctx`. Every call: authenticates the caller
 * again (a refusal is a tool error, 28P01), runs on the proxy's own listener as the key (see
 * ProxyPools: analysis, decision, masking, error redaction and the proxy's audit happen there), and
 * writes one `mcp-tool` audit line. A refusal or failure is a tool error whose text is the proxy's
 * ErrorResponse (MESSAGE, DETAIL, HINT, SQLSTATE), never an empty result.
 */
export function createMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer(
    { name: 'pgwarden', version: ctx.version },
    {
      jsonSchemaValidator: sharedValidator(),
      instructions:
        'pgwarden: SQL access limited to what this API key’s roles allow. Columns the key may not SEE come back ' +
        'as *****; statements that test, compare or compute with such a column are refused. Call ' +
        'list_databases, then list_tables and describe_table (it says which columns are masked) before querying.',
    },
  );

  const call = async (
    tool: string,
    info: CallInfo,
    body: (identity: McpIdentity) => Promise<ToolOutput>,
  ): Promise<CallToolResult> => {
    const started = performance.now();
    const check = ctx.identity();
    const base = {
      tool,
      transport: ctx.transport,
      ...(info.database !== undefined ? { database: info.database } : {}),
      ...(info.sql !== undefined ? { sql: info.sql } : {}),
    };
    if (!check.ok) {
      const f = new ToolFailure(
        '28P01',
        check.reason === 'missing'
          ? 'no API key: set PGWARDEN_API_KEY to a key token'
          : 'the API key is not valid (unknown, revoked or expired)',
      );
      auditToolCall(ctx.logger, {
        ...base,
        identity: '',
        roles: [],
        outcome: 'refused',
        sqlstate: f.sqlstate,
        reason: f.message,
        durationMs: performance.now() - started,
      });
      return toolErrorResult(f);
    }
    const who = { identity: check.identity.keyId, roles: check.identity.roles };
    try {
      const out = await body(check.identity);
      auditToolCall(ctx.logger, {
        ...base,
        ...who,
        outcome: 'ok',
        ...(out.rows !== undefined ? { rows: out.rows } : {}),
        ...(out.truncated !== undefined ? { truncated: out.truncated } : {}),
        durationMs: performance.now() - started,
      });
      return { content: [{ type: 'text', text: out.text }], structuredContent: out.structured };
    } catch (e) {
      const f = toToolFailure(e);
      auditToolCall(ctx.logger, {
        ...base,
        ...who,
        outcome: f.sqlstate.startsWith('42') || f.sqlstate.startsWith('28') ? 'refused' : 'error',
        sqlstate: f.sqlstate,
        reason: f.message,
        durationMs: performance.now() - started,
      });
      return toolErrorResult(f);
    }
  };

  const readOnly = { readOnlyHint: true, destructiveHint: false, openWorldHint: false } as const;

  server.registerTool(
    'list_databases',
    {
      title: 'List databases',
      description:
        'The databases this API key’s roles reach, each with a one-line summary of what they allow there.',
      inputSchema: TOOL_OBJECTS.list_databases.input,
      outputSchema: TOOL_OBJECTS.list_databases.output,
      annotations: { ...readOnly, idempotentHint: true },
    },
    async () =>
      call('list_databases', {}, async (identity) => {
        const databases = summarizeDatabases(ctx.config(), identity.roles);
        return { structured: { databases }, text: json(databases) };
      }),
  );

  server.registerTool(
    'list_tables',
    {
      title: 'List tables',
      description: 'The tables and views of a database that this key may SELECT, with their kind.',
      inputSchema: TOOL_OBJECTS.list_tables.input,
      outputSchema: TOOL_OBJECTS.list_tables.output,
      annotations: { ...readOnly, idempotentHint: true },
    },
    async (args, extra) =>
      call('list_tables', { database: args.database }, async (identity) => {
        // The connection is the key's login to the database (refused as at connect: 3D000, 42501);
        // the catalog is the proxy's shared one, not read again per call.
        const catalog = await withConnection(
          ctx.pools,
          args.database,
          identity,
          () => sharedCatalog(ctx.catalog, args.database),
          extra.signal,
          true,
        );
        const tables = listTables(ctx.config(), identity, args.database, catalog, args.schema);
        return { structured: { database: args.database, tables }, text: json(tables), rows: tables.length };
      }),
  );

  server.registerTool(
    'describe_table',
    {
      title: 'Describe a table',
      description:
        'Columns of a table or view with types, nullability and keys, and which columns come back masked (*****) for this key.',
      inputSchema: TOOL_OBJECTS.describe_table.input,
      outputSchema: TOOL_OBJECTS.describe_table.output,
      annotations: { ...readOnly, idempotentHint: true },
    },
    async (args, extra) =>
      call('describe_table', { database: args.database }, async (identity) => {
        const description = await withConnection(
          ctx.pools,
          args.database,
          identity,
          async (c, entry) => {
            let catalog = await sharedCatalog(ctx.catalog, args.database);
            // A name the catalog lacks (a table made outside pgwarden since it was read): read it
            // again, at most once a second, as a statement naming an unknown relation does.
            if (!relationNamed(catalog, args.table, args.schema))
              catalog = await sharedCatalog(ctx.catalog, args.database, true);
            const config = ctx.config();
            return describeTable(c, entry, config, identity, args.database, catalog, args.table, args.schema);
          },
          extra.signal,
          true,
        );
        return { structured: { ...description }, text: json(description) };
      }),
  );

  server.registerTool(
    'execute_query',
    {
      title: 'Run a read-only query',
      description:
        `Runs one read-only statement in a READ ONLY transaction; returns at most max_rows rows (default ${DEFAULT_MAX_ROWS}) ` +
        'and at most 4 MiB of them as JSON (truncated tells whether there were more). Masked columns read *****. The text content is the rows as JSON.',
      inputSchema: TOOL_OBJECTS.execute_query.input,
      outputSchema: TOOL_OBJECTS.execute_query.output,
      annotations: readOnly,
    },
    async (args, extra) =>
      call('execute_query', { database: args.database, sql: args.sql }, async (identity) => {
        const maxRows = args.max_rows ?? DEFAULT_MAX_ROWS;
        const result = await withConnection(
          ctx.pools,
          args.database,
          identity,
          (c, entry) => runReadQuery(c, entry, args.sql, args.params as SqlParam[] | undefined, maxRows),
          extra.signal,
        );
        return {
          structured: { ...result },
          text: json(result.rows),
          rows: result.row_count,
          truncated: result.truncated,
        };
      }),
  );

  server.registerTool(
    'execute_statement',
    {
      title: 'Run a statement that changes data',
      description:
        'Runs one statement (INSERT, UPDATE, DELETE, or DDL) and commits it; refused unless this key’s roles grant what it needs. Returns the rows of a RETURNING clause.',
      inputSchema: TOOL_OBJECTS.execute_statement.input,
      outputSchema: TOOL_OBJECTS.execute_statement.output,
      annotations: {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: false,
      },
    },
    async (args, extra) =>
      call('execute_statement', { database: args.database, sql: args.sql }, async (identity) => {
        const result = await withConnection(
          ctx.pools,
          args.database,
          identity,
          (c, entry) => runStatement(c, entry, args.sql, args.params as SqlParam[] | undefined),
          extra.signal,
        );
        return {
          structured: { ...result },
          text: json({ command: result.command, affected: result.affected, rows: result.rows }),
          rows: result.affected ?? result.row_count,
          truncated: result.truncated,
        };
      }),
  );

  server.registerTool(
    'explain_query',
    {
      title: 'Explain a query',
      description:
        'EXPLAIN of one statement, decided like the statement itself; with analyze: true, EXPLAIN ANALYZE (runs it, in a READ ONLY transaction).',
      inputSchema: TOOL_OBJECTS.explain_query.input,
      outputSchema: TOOL_OBJECTS.explain_query.output,
      annotations: readOnly,
    },
    async (args, extra) =>
      call('explain_query', { database: args.database, sql: args.sql }, async (identity) => {
        const lines = await withConnection(
          ctx.pools,
          args.database,
          identity,
          (c, entry) =>
            runExplain(c, entry, args.sql, args.params as SqlParam[] | undefined, args.analyze ?? false),
          extra.signal,
        );
        const plan = lines.join('\n');
        return { structured: { plan }, text: plan };
      }),
  );

  return server;
}

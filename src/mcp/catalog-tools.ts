// The catalog tools: list_databases, list_tables and describe_table, over the proxy's shared catalog.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { summarizeDatabases } from './database-summary.js';
import { withConnection } from './query-runner.js';
import { describeTable, listTables, relationNamed, sharedCatalog } from './table-catalog.js';
import { READ_ONLY, runToolCall, type ToolContext } from './tool-call.js';
import { TOOL_OBJECTS } from './tool-schemas.js';

/**
 * Registers list_databases, list_tables and describe_table on `server` for `ctx` (issue 10; the
 * catalog from the proxy's shared one, issue 18). Each call runs in {@link runToolCall}: the key
 * checked again, one audit line, failures as tool errors.
 */
export function registerCatalogTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'list_databases',
    {
      title: 'List databases',
      description:
        'The databases this API key’s roles reach, each with a one-line summary of what they allow there.',
      inputSchema: TOOL_OBJECTS.list_databases.input,
      outputSchema: TOOL_OBJECTS.list_databases.output,
      annotations: { ...READ_ONLY, idempotentHint: true },
    },
    async () =>
      runToolCall(ctx, 'list_databases', {}, async (identity) => {
        const databases = summarizeDatabases(ctx.config(), identity.roles);
        return { structured: { databases }, text: JSON.stringify(databases) };
      }),
  );

  server.registerTool(
    'list_tables',
    {
      title: 'List tables',
      description: 'The tables and views of a database that this key may SELECT, with their kind.',
      inputSchema: TOOL_OBJECTS.list_tables.input,
      outputSchema: TOOL_OBJECTS.list_tables.output,
      annotations: { ...READ_ONLY, idempotentHint: true },
    },
    async (args, extra) =>
      runToolCall(ctx, 'list_tables', { database: args.database }, async (identity) => {
        // The connection is the key's login to the database (refused as at connect: 3D000, 42501);
        // the catalog is the proxy's shared one, not read again per call.
        const catalog = await withConnection(
          ctx.pools,
          args.database,
          identity,
          () => sharedCatalog(ctx.catalog, args.database),
          { signal: extra.signal, leavesNoState: true, readOnly: true },
        );
        const tables = listTables(ctx.config(), identity, args.database, catalog, args.schema);
        return {
          structured: { database: args.database, tables },
          text: JSON.stringify(tables),
          rows: tables.length,
        };
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
      annotations: { ...READ_ONLY, idempotentHint: true },
    },
    async (args, extra) =>
      runToolCall(ctx, 'describe_table', { database: args.database }, async (identity) => {
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
          { signal: extra.signal, leavesNoState: true, readOnly: true },
        );
        return { structured: { ...description }, text: JSON.stringify(description) };
      }),
  );
}

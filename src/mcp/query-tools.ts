// The SQL tools: execute_query (read only, capped), execute_statement (one committed statement) and explain_query.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  DEFAULT_MAX_ROWS,
  runExplain,
  runReadQuery,
  runStatement,
  type SqlParam,
  withConnection,
} from './query-runner.js';
import { READ_ONLY, runToolCall, type ToolContext } from './tool-call.js';
import { TOOL_OBJECTS } from './tool-schemas.js';

/**
 * Registers execute_query, execute_statement and explain_query on `server` for `ctx` (issue 10).
 * Each runs its one statement through the proxy as the key (query-runner.ts), in
 * {@link runToolCall}: the key checked again, one audit line, failures as tool errors.
 */
export function registerQueryTools(server: McpServer, ctx: ToolContext): void {
  server.registerTool(
    'execute_query',
    {
      title: 'Run a read-only query',
      description:
        `Runs one read-only statement in a READ ONLY transaction; returns at most max_rows rows (default ${DEFAULT_MAX_ROWS}) ` +
        'and at most 4 MiB of them as JSON (truncated tells whether there were more). Masked columns read *****. The text content is the rows as JSON.',
      inputSchema: TOOL_OBJECTS.execute_query.input,
      outputSchema: TOOL_OBJECTS.execute_query.output,
      annotations: READ_ONLY,
    },
    async (args, extra) =>
      runToolCall(ctx, 'execute_query', { database: args.database, sql: args.sql }, async (identity) => {
        const maxRows = args.max_rows ?? DEFAULT_MAX_ROWS;
        const result = await withConnection(
          ctx.pools,
          args.database,
          identity,
          (c, entry) => runReadQuery(c, entry, args.sql, args.params as SqlParam[] | undefined, maxRows),
          { signal: extra.signal, readOnly: true },
        );
        return {
          structured: { ...result },
          text: JSON.stringify(result.rows),
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
      runToolCall(ctx, 'execute_statement', { database: args.database, sql: args.sql }, async (identity) => {
        const result = await withConnection(
          ctx.pools,
          args.database,
          identity,
          (c, entry) => runStatement(c, entry, args.sql, args.params as SqlParam[] | undefined),
          { signal: extra.signal },
        );
        return {
          structured: { ...result },
          text: JSON.stringify({ command: result.command, affected: result.affected, rows: result.rows }),
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
      annotations: READ_ONLY,
    },
    async (args, extra) =>
      runToolCall(ctx, 'explain_query', { database: args.database, sql: args.sql }, async (identity) => {
        const lines = await withConnection(
          ctx.pools,
          args.database,
          identity,
          (c, entry) =>
            runExplain(c, entry, args.sql, args.params as SqlParam[] | undefined, args.analyze ?? false),
          { signal: extra.signal, readOnly: true },
        );
        const plan = lines.join('\n');
        return { structured: { plan }, text: plan };
      }),
  );
}

// The tools' input and output schemas (zod shapes, JSON Schema on the wire), built once for every McpServer.
import { z } from 'zod';
import { DEFAULT_MAX_ROWS, MAX_MAX_ROWS } from './query-runner.js';

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
export const TOOL_OBJECTS = Object.fromEntries(
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

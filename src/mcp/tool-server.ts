// The McpServer one caller talks to: pgwarden's instructions and its six tools, on one JSON Schema validator per process.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { registerCatalogTools } from './catalog-tools.js';
import { registerQueryTools } from './query-tools.js';
import type { ToolContext } from './tool-call.js';

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
 * Builds an McpServer with the six tools of issue 10 for `ctx` (catalog-tools.ts, query-tools.ts).
 * Every call: authenticates the caller again (a refusal is a tool error, 28P01), runs on the proxy's
 * own listener as the key (see ProxyPools: analysis, decision, masking, error redaction and the
 * proxy's audit happen there), and writes one `mcp-tool` audit line (tool-call.ts). A refusal or
 * failure is a tool error whose text is the proxy's ErrorResponse (MESSAGE, DETAIL, HINT, SQLSTATE),
 * never an empty result.
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
  registerCatalogTools(server, ctx);
  registerQueryTools(server, ctx);
  return server;
}

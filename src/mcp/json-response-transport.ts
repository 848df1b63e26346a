// One Streamable HTTP POST as an MCP Transport on node:http: its JSON-RPC messages in, their responses out as one JSON body.
import type http from 'node:http';
import {
  DEFAULT_MAX_REQUEST_BODY_SIZE,
  MAX_BATCH_SIZE,
  requestBodyTooLargeMessage,
} from '@modelcontextprotocol/sdk/server/requestBody.js';
import { isJsonContentType } from '@modelcontextprotocol/sdk/shared/mediaType.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type JSONRPCMessage,
  JSONRPCMessageSchema,
  type MessageExtraInfo,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';

/** The largest request body read (bytes): the SDK's own transport's default, 4 MiB. */
const MAX_BODY_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE;

/** A refusal of a POST before any message is handed on: the HTTP status and the JSON-RPC error. */
export interface PostRefusal {
  readonly status: number;
  readonly code: number;
  readonly message: string;
}

/** A POST's messages, validated, with what a handler sees of the request. */
export interface PostMessages {
  readonly messages: readonly JSONRPCMessage[];
  /** The ids of the requests among them (the responses to wait for); empty: notifications or responses only (202). */
  readonly requestIds: readonly RequestId[];
  readonly extra: MessageExtraInfo;
}

function readBody(req: http.IncomingMessage): Promise<Buffer | 'too-large'> {
  if (Number(req.headers['content-length']) > MAX_BODY_BYTES) return Promise.resolve('too-large');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Past the limit nothing more is kept (node:http discards the rest once the 413 is sent).
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) resolve('too-large');
      else chunks.push(c);
    });
    req.on('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/**
 * Reads and checks one POST as the SDK's StreamableHTTPServerTransport (JSON response mode) does,
 * answering the same statuses: 406 unless Accept names both `application/json` and
 * `text/event-stream`; 415 unless the body is `application/json`; 413 over {@link MAX_BODY_BYTES};
 * 400 -32700 for JSON that does not parse or a message that is not JSON-RPC 2.0
 * (JSONRPCMessageSchema, the SDK's own schema, once per message); 400 -32600 for a batch over
 * MAX_BATCH_SIZE (100); 400 -32000 for an `mcp-protocol-version` header the SDK does not support.
 * Output: the messages, or the refusal. Source: MCP specification 2025-06-18, "Transports —
 * Streamable HTTP" (sending messages to the server).
 */
export async function readPost(req: http.IncomingMessage, url: URL): Promise<PostMessages | PostRefusal> {
  const accept = req.headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream'))
    return {
      status: 406,
      code: -32000,
      message: 'Not Acceptable: Client must accept both application/json and text/event-stream',
    };
  if (!isJsonContentType(req.headers['content-type']))
    return {
      status: 415,
      code: -32000,
      message: 'Unsupported Media Type: Content-Type must be application/json',
    };
  const body = await readBody(req);
  if (body === 'too-large')
    return {
      status: 413,
      code: -32000,
      message: requestBodyTooLargeMessage(MAX_BODY_BYTES),
    };
  let raw: unknown;
  try {
    raw = JSON.parse(body.toString('utf8'));
  } catch {
    return { status: 400, code: -32700, message: 'Parse error: Invalid JSON' };
  }
  const list = Array.isArray(raw) ? raw : [raw];
  if (list.length > MAX_BATCH_SIZE)
    return {
      status: 400,
      code: -32600,
      message: `Invalid Request: Batch must not exceed ${MAX_BATCH_SIZE} messages`,
    };
  const messages: JSONRPCMessage[] = [];
  for (const m of list) {
    const parsed = JSONRPCMessageSchema.safeParse(m);
    if (!parsed.success)
      return { status: 400, code: -32700, message: 'Parse error: Invalid JSON-RPC message' };
    messages.push(parsed.data);
  }
  const version = req.headers['mcp-protocol-version'];
  if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version))
    return {
      status: 400,
      code: -32000,
      message: `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
    };
  // The schema above admits a request only with `method` and `id`, a notification with `method` alone.
  const requestIds = messages.flatMap((m) => ('method' in m && 'id' in m ? [m.id] : []));
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
  return { messages, requestIds, extra: { requestInfo: { headers, url } } };
}

/**
 * The Transport one McpServer is connected to for one POST (stateless: no session id, nothing sent
 * unasked). `deliver` hands the POST's messages to the server; `send` keeps each response and, once
 * every request of the POST has one, writes them as the HTTP response (200, `application/json`, one
 * object, or an array for several), as the SDK's transport does in JSON response mode; a
 * notification or request the server sends meanwhile (progress, logging) has no stream to go to and
 * is dropped, as there. When the HTTP response closes before that (the client went away), the
 * transport closes: the SDK aborts the requests' handlers (their `extra.signal`), and the tools cancel
 * their statements. Replaces the SDK's StreamableHTTPServerTransport, whose Node adapter turned
 * every request and response into web streams: ~4 ms of CPU per call (issue 18).
 */
export class JsonResponseTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  private readonly responses = new Map<RequestId, JSONRPCMessage>();
  private closed = false;

  constructor(
    private readonly res: http.ServerResponse,
    private readonly post: PostMessages,
  ) {
    res.on('close', () => void this.close());
  }

  async start(): Promise<void> {}

  /** Hands the POST's messages to the connected server, in order. */
  deliver(): void {
    for (const m of this.post.messages) this.onmessage?.(m, this.post.extra);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const id = 'method' in message ? undefined : (message as { id?: RequestId }).id;
    if (this.closed || id === undefined) return;
    this.responses.set(id, message);
    const ids = this.post.requestIds;
    if (!ids.every((id) => this.responses.has(id))) return;
    const out = ids.map((id) => this.responses.get(id));
    const body = JSON.stringify(out.length === 1 ? out[0] : out);
    this.res.writeHead(200, { 'content-type': 'application/json' });
    this.res.end(body);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onclose?.();
  }
}

// The admin API's HTTP plumbing: zod as Fastify's validator, errors as JSON (422 with paths), zod schemas in the OpenAPI document.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError, type ZodIssue, type ZodTypeAny } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { formatPath } from '../policy/config-issues.js';
import { PolicyInvalidError } from '../policy/policy-document.js';
import { PolicyConflictError } from '../policy/policy-store.js';

/** An error with its HTTP status and JSON body (`{error, message, …}`), thrown by route handlers. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** One validation problem as the API reports it: the path (`body.permissions[0].effect`) and what is wrong. */
export interface ApiIssue {
  readonly path: string;
  readonly message: string;
}

function issueOf(prefix: string, i: ZodIssue): ApiIssue {
  const message =
    i.code === 'unrecognized_keys'
      ? `unknown key${i.keys.length > 1 ? 's' : ''} ${i.keys.join(', ')}`
      : i.code === 'invalid_enum_value'
        ? `expected ${i.options.map((o) => JSON.stringify(o)).join(' | ')}`
        : i.message;
  return { path: formatPath([prefix, ...i.path]), message };
}

/**
 * Makes Fastify validate each request part with the zod schema given in a route's `schema`
 * (Fastify's `setValidatorCompiler`, https://fastify.dev/docs/latest/Reference/Validation-and-Serialization/):
 * the parsed value (defaults filled, coercions applied) replaces the raw one; a failure becomes a 422.
 */
export function useZodValidation(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const zod = schema as unknown as ZodTypeAny;
    const prefix = httpPart === 'querystring' ? 'query' : (httpPart ?? 'body');
    return (data: unknown) => {
      const r = zod.safeParse(data);
      if (r.success) return { value: r.data };
      const error = new HttpError(422, 'invalid', 'the request does not validate', {
        issues: r.error.issues.map((i) => issueOf(prefix, i)),
      });
      return { error };
    };
  });
}

/**
 * The error handler: an HttpError as its status and body; a PolicyInvalidError as 422 with every
 * issue's path under `policy.` (issue 19: "refused with 422 and every error's path"); a
 * PolicyConflictError as 409 with the current version; Fastify's own 4xx (bad JSON, too large) as they
 * are; anything else as 500 without its message (logged by the caller's hook).
 */
export function errorReply(
  error: FastifyError | Error,
  _req: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  const validation = (error as FastifyError).validation as unknown;
  if (
    error instanceof HttpError ||
    (validation && (error as { cause?: unknown }).cause instanceof HttpError)
  ) {
    const e = error instanceof HttpError ? error : ((error as { cause: HttpError }).cause as HttpError);
    return reply.code(e.status).send({ error: e.code, message: e.message, ...e.extra });
  }
  if (error instanceof PolicyInvalidError)
    return reply.code(422).send({
      error: 'invalid-policy',
      message: 'the policy would not validate; nothing was changed',
      issues: error.issues.map((i) => ({ path: `policy.${i.path}`, message: i.message })),
    });
  if (error instanceof PolicyConflictError)
    return reply
      .code(409)
      .send({ error: 'conflict', message: error.message, current_version: error.currentVersion });
  if (error instanceof ZodError)
    return reply.code(422).send({ error: 'invalid', issues: error.issues.map((i) => issueOf('body', i)) });
  const status = (error as FastifyError).statusCode;
  if (/^FST_CSRF/.test((error as FastifyError).code ?? ''))
    return reply.code(403).send({
      error: 'csrf',
      message: 'missing or invalid CSRF token (x-csrf-token, from the login answer)',
    });
  if (status !== undefined && status >= 400 && status < 500)
    return reply
      .code(status)
      .send({ error: (error as FastifyError).code ?? 'bad-request', message: error.message });
  return reply.code(500).send({ error: 'internal', message: 'internal error' });
}

/** A zod schema as OpenAPI 3 JSON schema (inline, no $refs). */
export function jsonSchemaOf(schema: ZodTypeAny): Record<string, unknown> {
  const { $schema: _s, ...rest } = zodToJsonSchema(schema, {
    target: 'openApi3',
    $refStrategy: 'none',
  }) as Record<string, unknown>;
  return rest;
}

/** `@fastify/swagger`'s `transform`: the zod schemas of a route as the JSON schemas the OpenAPI document shows. */
export function openApiTransform({ schema, url }: { schema: unknown; url: string }): {
  schema: Record<string, unknown>;
  url: string;
} {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries((schema ?? {}) as Record<string, unknown>)) {
    out[k] =
      (k === 'body' || k === 'params' || k === 'querystring') &&
      v !== null &&
      typeof v === 'object' &&
      'safeParse' in v
        ? jsonSchemaOf(v as ZodTypeAny)
        : v;
  }
  return { schema: out, url };
}

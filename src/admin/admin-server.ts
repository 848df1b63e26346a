// The admin API server (`serve --admin HOST:PORT`): Fastify, sessions and Bearer keys, CSRF, OpenAPI, /healthz, the routes.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';
import { splitHostPort } from '../policy/config-schema.js';
import { editorHolds } from '../policy/grant-limits.js';
import { APP_ACTIONS } from '../policy/policy-schema.js';
import type { PolicySource } from '../policy/policy-source.js';
import type { ProxyServer } from '../proxy/proxy-port.js';
import { AdminAuth, SESSION_COOKIE, SESSION_IDLE_MS } from './admin-auth.js';
import { errorReply, HttpError, openApiTransform, useZodValidation } from './admin-http.js';
import { consoleAssets, isConsolePath } from './console-assets.js';
import { type AdminContext, auditAdmin, callerOf } from './policy-edit.js';
import { gridRoutes } from './routes-grid.js';
import { type MetricsExposition, opsRoutes, type ReadyCheck } from './routes-ops.js';
import { principalRoutes } from './routes-principals.js';
import { replayRoutes } from './routes-replay.js';
import { roleRoutes } from './routes-roles.js';
import { workspaceRoutes } from './routes-workspace.js';

/** Options of {@link startAdmin}. */
export interface AdminOptions {
  /** `host:port` (port 0: any free port). */
  readonly listen: string;
  readonly proxy: ProxyServer;
  /** The store's policy source; undefined when the policy is the config file (the API is then read-only). */
  readonly source: PolicySource | undefined;
  readonly logger: Logger;
  /** Where admin audit lines go (the instance's audit log). */
  readonly auditLogger: Logger;
  /** What `/metrics` serves (default: this process's registry; `serve --workers N`: the workers' aggregate). */
  readonly exposition?: MetricsExposition;
  /** Checks `/readyz` adds to its own (routes-ops.ts). */
  readonly readyChecks?: readonly (() => ReadyCheck | Promise<ReadyCheck>)[];
}

/** A running admin API. */
export interface AdminServer {
  readonly address: { host: string; port: number };
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

const loginBody = z
  .object({ user: z.string().min(1).max(63), password: z.string().min(1).max(1024) })
  .strict();

/** Paths served without a caller. */
const PUBLIC = new Set(['/healthz', '/readyz', '/metrics', '/api/openapi.json', '/api/login']);

/**
 * Starts the admin API (issue 19). JSON over HTTP (HTTPS with the instance's `tls` files), every
 * request body, query and path validated by zod schemas (the config's own where they exist), the
 * OpenAPI 3 document at `/api/openapi.json`. Callers: a workspace user's session cookie (HttpOnly,
 * SameSite=Strict, Secure under TLS) with a CSRF token (`x-csrf-token`, from the login answer) on
 * every state change, or an API key's `Authorization: Bearer <token>` (no cookie, so no CSRF).
 * Every `/api` route but login is gated by seed 004's app-level actions (routes-*.ts). `/healthz`,
 * `/readyz` and `/metrics` (routes-ops.ts) are served without a caller. Rejects when the address
 * cannot be bound.
 */
export async function startAdmin(opts: AdminOptions): Promise<AdminServer> {
  const loaded = opts.proxy.config();
  const tlsFiles = loaded.config.tls;
  const dir = path.dirname(loaded.file);
  const https = tlsFiles
    ? {
        key: fs.readFileSync(path.resolve(dir, tlsFiles.key)),
        cert: fs.readFileSync(path.resolve(dir, tlsFiles.cert)),
      }
    : undefined;
  const app = (https ? Fastify({ https, logger: false }) : Fastify({ logger: false })) as FastifyInstance;
  const secure = https !== undefined;
  const ctx: AdminContext = {
    config: () => opts.proxy.config(),
    source: opts.source,
    audit: opts.auditLogger,
  };
  const auth = new AdminAuth(
    () => opts.proxy.config().config,
    () => opts.proxy.config().config.limits.auth_failure_delay_ms,
  );

  useZodValidation(app);
  app.setErrorHandler((error, req, reply) => {
    if (!(error instanceof HttpError) && ((error as { statusCode?: number }).statusCode ?? 500) >= 500)
      opts.logger.error(
        { event: 'admin-error', err: (error as Error).message, route: req.url },
        'admin API error',
      );
    return errorReply(error as Error, req, reply);
  });
  await app.register(fastifyCookie);
  await app.register(fastifyCsrf, {
    cookieOpts: { httpOnly: true, sameSite: 'strict', secure, path: '/' },
    getUserInfo: (req) => req.caller?.sessionId ?? '',
    // Tokens are bound to this instance's sessions, which live in its memory (admin-auth.ts).
    csrfOpts: { hmacKey: crypto.randomBytes(32).toString('base64'), userInfo: true },
  });
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'pgwarden admin API',
        version: '1',
        description:
          'Every route but /api/login is gated by app-level actions (deny wins, default deny; ' +
          'workspace admins hold them all). Edits send If-Match with the version read (409 when the object changed since).',
      },
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE },
          bearer: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ session: [] }, { bearer: [] }],
    },
    transform: openApiTransform,
  });

  app.addHook('onRequest', async (req) => {
    const url = req.url.split('?')[0] ?? '';
    const caller = auth.authenticate(req.cookies[SESSION_COOKIE], req.headers.authorization);
    if (caller) req.caller = caller;
    if (PUBLIC.has(url) || isConsolePath(url)) return;
    if (!caller)
      throw new HttpError(
        401,
        'unauthenticated',
        'log in (POST /api/login) or send Authorization: Bearer <token>',
      );
  });
  // CSRF (@fastify/csrf-protection, double submit bound to the session): every state change of a
  // cookie caller carries the token of its login answer in x-csrf-token; a Bearer caller has no cookie.
  app.addHook('onRequest', (req, reply, done) => {
    const url = req.url.split('?')[0] ?? '';
    if (req.caller?.via === 'session' && !PUBLIC.has(url) && !['GET', 'HEAD', 'OPTIONS'].includes(req.method))
      app.csrfProtection(req, reply, done);
    else done();
  });

  opsRoutes(app, opts.proxy, opts.source, {
    ...(opts.exposition ? { exposition: opts.exposition } : {}),
    ...(opts.readyChecks ? { readyChecks: opts.readyChecks } : {}),
  });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.post<{ Body: z.infer<typeof loginBody> }>(
    '/api/login',
    {
      schema: {
        tags: ['session'],
        summary: 'log in with a workspace password; sets the session cookie, returns the CSRF token',
        body: loginBody,
      },
    },
    async (req, reply) => {
      const r = await auth.login(req.body.user, req.body.password, req.ip);
      if (!r.ok) {
        auditAdmin(ctx, req, { status: r.status, action: 'login', detail: `user ${req.body.user}` });
        if (r.retryAfterS !== undefined) reply.header('retry-after', String(r.retryAfterS));
        throw new HttpError(r.status, r.status === 429 ? 'locked' : 'unauthenticated', r.message);
      }
      reply.setCookie(SESSION_COOKIE, r.sessionId, {
        httpOnly: true,
        sameSite: 'strict',
        secure,
        path: '/',
        maxAge: SESSION_IDLE_MS / 1000,
      });
      const caller = auth.authenticate(r.sessionId, undefined);
      if (caller) req.caller = caller;
      auditAdmin(ctx, req, { status: 200, action: 'login' });
      return { user: req.body.user, csrf_token: reply.generateCsrf({ userInfo: r.sessionId }) };
    },
  );
  app.post(
    '/api/logout',
    { schema: { tags: ['session'], summary: 'end the session' } },
    async (req, reply) => {
      const id = callerOf(req).sessionId;
      if (id !== undefined) auth.logout(id);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
      return { ok: true };
    },
  );
  app.get(
    '/api/session',
    { schema: { tags: ['session'], summary: 'who is calling, with which roles and app-level actions' } },
    async (req, reply) => {
      const c = callerOf(req);
      const config = opts.proxy.config().config;
      return {
        user: c.name,
        via: c.via,
        roles: c.roles,
        workspace_admin: c.workspaceAdmin,
        actions: APP_ACTIONS.filter((a) => editorHolds(config, c, a)),
        ...(c.via === 'session' ? { csrf_token: reply.generateCsrf({ userInfo: c.sessionId ?? '' }) } : {}),
      };
    },
  );

  roleRoutes(app, ctx);
  principalRoutes(app, ctx);
  workspaceRoutes(app, ctx);
  replayRoutes(app, ctx);
  gridRoutes(app, ctx);
  await consoleAssets(app);

  const [host, port] = splitHostPort(opts.listen);
  await app.listen({ host, port });
  const addr = app.server.address();
  const bound = typeof addr === 'object' && addr ? { host: addr.address, port: addr.port } : { host, port };
  opts.logger.info({ event: 'admin-listening', ...bound, tls: secure }, 'admin API listening');
  return { address: bound, app, close: () => app.close() };
}

// Serves the web console (issue 20): static ES modules, CSS and HTML from src/admin/console, no CDN, no build step.
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** The folder of the console's files. */
export const CONSOLE_DIR = path.resolve(import.meta.dirname, 'console');

/**
 * The Content-Security-Policy of every console page: only pgwarden's own scripts, styles and API
 * (no CDN, no inline script), never framed (clickjacking), no plugins, forms post only here.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** True for the paths served without a caller: the console's own files (the API checks the caller). */
export function isConsolePath(url: string): boolean {
  return url === '/' || url === '/console' || url.startsWith('/console/');
}

/**
 * Registers the console under `/console/` (`/` redirects there) with @fastify/static
 * (https://github.com/fastify/fastify-static): every asset from {@link CONSOLE_DIR}, with
 * `Cache-Control: no-cache` (an upgraded pgwarden serves its new files at once); every answer of the
 * server, console or API, carries {@link CONSOLE_CSP}, `X-Frame-Options: DENY` (frame-ancestors for
 * browsers without CSP 2), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
 */
export async function consoleAssets(app: FastifyInstance): Promise<void> {
  await app.register(fastifyStatic, {
    root: CONSOLE_DIR,
    prefix: '/console/',
    index: ['index.html'],
    cacheControl: false,
    setHeaders(reply) {
      reply.header('cache-control', 'no-cache');
    },
  });
  // Every answer, the console's files and the API's JSON alike (a 404, an error, a redirect too).
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('content-security-policy', CONSOLE_CSP);
    reply.header('x-frame-options', 'DENY');
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    return payload;
  });
  app.get('/', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/console/'));
  app.get('/console', { schema: { hide: true } }, async (_req, reply) => reply.redirect('/console/'));
}

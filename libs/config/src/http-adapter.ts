import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyServerOptions } from 'fastify';

/**
 * The HTTP server both apps serve with: Fastify, set to route as Express did: paths case-insensitively and with or
 * without a trailing slash, path parameters of any length (Fastify's default of 100 characters would make a long
 * workflow name a 404), keep-alive requests during shutdown served rather than refused with 503. Idle keep-alive
 * connections last Node's 5 s, not Fastify's 72 s: clients keep an idle connection as long as the server says it
 * does, and one that never carried a request holds a shutting-down server open until the client drops it.
 * `frameworkErrors` answers what Fastify's router refuses before any route runs, `clientErrorHandler` what Node's HTTP
 * parser refuses before Fastify sees a request (headers too large, a malformed request): Fastify's own answers
 * without them.
 */
export function httpAdapter(
  frameworkErrors?: FastifyServerOptions['frameworkErrors'],
  clientErrorHandler?: FastifyServerOptions['clientErrorHandler'],
): FastifyAdapter {
  return new FastifyAdapter({
    routerOptions: { caseSensitive: false, ignoreTrailingSlash: true, maxParamLength: Number.MAX_SAFE_INTEGER },
    return503OnClosing: false,
    keepAliveTimeout: 5_000,
    frameworkErrors,
    clientErrorHandler,
  });
}

import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where `npm run build` puts the dashboard, relative to the project (or image) root. */
const BUILT_DASHBOARD = join('dist', 'dashboard');

/**
 * The built dashboard of this installation: `dist/dashboard` in the first folder above the coordinator's code
 * that has one (the code runs from apps/… in tests and from dist/apps/… when built; both sit under the root).
 */
export function findBuiltDashboard(from: string = __dirname): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, BUILT_DASHBOARD, 'index.html'))) return join(dir, BUILT_DASHBOARD);
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Serves the dashboard's files at `mount` (GET and HEAD): hashed assets under /assets (cached for good), and
 * index.html for every other path, so that a deep link (/ui/runs/<id>) loads the app, which routes it in the
 * browser. The API's own routes under `mount` (its config.json) are matched before these wildcards. Without a
 * build it answers 404 with the error body and says how to make one.
 */
export function serveDashboard(fastify: FastifyInstance, mount: string, dir: string | undefined): void {
  fastify.register(async (scope) => {
    if (!dir) {
      scope.get(mount, notBuilt).get(`${mount}/*`, notBuilt);
      return;
    }
    // Only its sendFile: refuses paths that climb out of the root (403) and calls the not-found handler for missing files.
    await scope.register(fastifyStatic, { root: dir, serve: false });
    const assets = join(dir, 'assets');
    scope.get(`${mount}/assets/*`, (request: FastifyRequest<{ Params: { '*': string } }>, reply) =>
      reply.sendFile(request.params['*'], assets, { maxAge: '365d', immutable: true, dotfiles: 'deny' }),
    );
    const index = (_request: FastifyRequest, reply: FastifyReply) => reply.header('cache-control', 'no-cache').sendFile('index.html', { cacheControl: false });
    scope.get(mount, index).get(`${mount}/*`, index);
  });
}

function notBuilt(_request: FastifyRequest, reply: FastifyReply): void {
  reply.status(404).send({
    statusCode: 404,
    error: 'Not Found',
    reason: 'dashboard_not_built',
    message: 'the dashboard has not been built: run `npm run build` (or set DASHBOARD_DIR to a built dashboard)',
  });
}

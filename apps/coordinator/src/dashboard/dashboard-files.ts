import type { NextFunction, Request, Response } from 'express';
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
 * Serves the dashboard's files, mounted at /ui: hashed assets under /assets (cached for good), and index.html for
 * every other path, so that a deep link (/ui/runs/<id>) loads the app, which routes it in the browser. Without a
 * build it answers 404 with the error body and says how to make one.
 */
export function dashboardFiles(dir: string | undefined) {
  return (request: Request, response: Response, next: NextFunction): void => {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      next();
      return;
    }
    if (!dir) {
      response.status(404).json({
        statusCode: 404,
        error: 'Not Found',
        reason: 'dashboard_not_built',
        message: 'the dashboard has not been built: run `npm run build` (or set DASHBOARD_DIR to a built dashboard)',
      });
      return;
    }
    // sendFile with `root` refuses paths that climb out of it (403) and answers 404 for missing files.
    if (request.path.startsWith('/assets/')) {
      response.sendFile(request.path, { root: dir, maxAge: '365d', immutable: true, dotfiles: 'deny' }, (error) => error && next(error));
      return;
    }
    response.setHeader('cache-control', 'no-cache');
    response.sendFile('index.html', { root: dir }, (error) => error && next(error));
  };
}

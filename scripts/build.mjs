// `npm start` builds with this, and only what changed since the last build (scripts/incremental-build.mjs):
// the published packages, each app, the dashboard. `npm run build` (`--force`) builds everything.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildTargets } from './incremental-build.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (tool) => join(root, 'node_modules', '.bin', tool);

/** What shapes every output: the dependencies installed, the compiler settings, and these target definitions. */
const SHARED = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs', 'scripts/incremental-build.mjs'];

/** A published package: the packages it compiles against as installed (their dist) are inputs too. */
const publishedPackage = (name, inputs) => ({
  name: `package-${name}`,
  inputs: [...SHARED, 'scripts/build-packages.mjs', `packages/${name}`, ...inputs],
  outputs: [`packages/${name}/dist`],
  command: [process.execPath, join(root, 'scripts/build-packages.mjs'), name],
});

/** An app, compiled by `nest build` with its imports of the libs and packages from their sources (tsconfig paths). */
const app = (name, inputs) => ({
  name: `app-${name}`,
  inputs: [...SHARED, 'nest-cli.json', `apps/${name}`, ...inputs],
  outputs: [`dist/apps/${name}/apps/${name}/src/main.js`],
  command: [bin('nest'), 'build', name],
});

/** In build order: a package before the ones compiled against it. */
export const TARGETS = [
  publishedPackage('common', []),
  publishedPackage('client', ['packages/common']),
  publishedPackage('workflow', ['packages/common']),
  publishedPackage('worker', ['packages/common', 'packages/client', 'packages/workflow', 'libs/streams', 'libs/locking']),
  app('coordinator', ['libs', 'packages/common']),
  app('worker', ['libs', 'packages']),
  {
    name: 'dashboard',
    inputs: [...SHARED, 'apps/dashboard', 'packages/common'],
    outputs: ['dist/dashboard/index.html'],
    command: ['npm', 'run', '--silent', 'build:dashboard'],
  },
];

export const STAMP_DIR = join(root, 'dist', '.build-stamps');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = Date.now();
  const built = buildTargets({
    root,
    stampDir: STAMP_DIR,
    targets: TARGETS,
    force: process.argv.includes('--force'),
    log: (line) => console.log(`[build] ${line}`),
  });
  console.log(`[build] ${built.length ? `built ${built.join(', ')}` : 'nothing to build'} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// Builds the published packages into their own dist, in dependency order: @nest-durable/common, then the client
// and the workflow SDK (which import it as an installed package would), then the worker, then the test kit. The
// worker ships the libs it imports (libs/streams, libs/locking, libs/metrics); the test kit ships the coordinator
// app and its server libs. They compile beside the package's own code (dist/libs/<lib>/src, dist/apps/coordinator/src),
// and their `@app/...` aliases (the package tsconfig.build.json's `paths`) become relative paths here, as
// `nest build` does for the apps. `node scripts/build-packages.mjs common client` builds only those (in that order).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const ts = require('typescript');
const ALL = ['common', 'client', 'workflow', 'worker', 'testing'];
const PACKAGES = process.argv.length > 2 ? ALL.filter((name) => process.argv.includes(name)) : ALL;

for (const name of PACKAGES) rmSync(join(root, 'packages', name, 'dist'), { recursive: true, force: true });
for (const name of PACKAGES) {
  try {
    execFileSync(process.execPath, [tsc, '-p', join(root, 'packages', name, 'tsconfig.build.json')], { cwd: root, stdio: 'inherit' });
  } catch (error) {
    // tsc printed its errors above; say which package they are of, in one line.
    console.error(`building packages/${name} failed: ${error.status === null ? `tsc ended by ${error.signal}` : `tsc exited with ${error.status}`}`);
    process.exit(1);
  }
}

for (const name of PACKAGES) shipAliasedCode(join(root, 'packages', name));
// The test kit's coordinator serves the dashboard as a deployed one does (env.coordinatorUrl + '/ui'): its build in the
// package's dist/dashboard, where the coordinator looks for it (findBuiltDashboard, from its code upward).
if (PACKAGES.includes('testing')) {
  const vite = join(dirname(require.resolve('vite/package.json')), 'bin/vite.js');
  const outDir = join(root, 'packages/testing/dist/dashboard');
  execFileSync(process.execPath, [vite, 'build', 'apps/dashboard', '--logLevel', 'warn', '--outDir', outDir, '--emptyOutDir'], { cwd: root, stdio: 'inherit' });
}

/**
 * Points a package's imports of the code it ships (`@app/<lib>`, a lib's entry `@app/<lib>/<entry>`, `@app/coordinator`:
 * the `@app/` aliases of its tsconfig.build.json) at their compiled copies in its dist.
 */
function shipAliasedCode(packageDir) {
  const configFile = join(packageDir, 'tsconfig.build.json');
  const { config } = ts.readConfigFile(configFile, ts.sys.readFile);
  const shipped = Object.entries(config.compilerOptions.paths ?? {}).filter(([alias]) => alias.startsWith('@app/'));
  if (shipped.length === 0) return;
  const dist = join(packageDir, 'dist');
  // The alias's source (a folder, whose index is the entry, or a module) under dist, where rootDir is the repository.
  const targets = new Map(
    shipped.map(([alias, [source]]) => {
      const path = relative(root, join(packageDir, source));
      return [alias, join(dist, statSync(join(root, path), { throwIfNoEntry: false })?.isDirectory() ? join(path, 'index') : path)];
    }),
  );
  const ALIAS = /(["'])(@app\/[a-z-]+(?:\/[a-z-]+)?)\1/g;
  for (const file of filesUnder(dist)) {
    if (!/\.(js|d\.ts)$/.test(file)) continue;
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(ALIAS, (whole, quote, alias) => {
      const target = targets.get(alias);
      if (!target) return whole;
      let path = relative(dirname(file), target).split(sep).join('/');
      if (!path.startsWith('.')) path = `./${path}`;
      return `${quote}${path}${file.endsWith('.js') ? '.js' : ''}${quote}`;
    });
    if (rewritten !== text) writeFileSync(file, rewritten);
  }
}

function filesUnder(dir) {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

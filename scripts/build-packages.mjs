// Builds the published packages into their own dist, in dependency order: @nest-durable/common, then the client
// and the workflow SDK (which import it as an installed package would), then the worker. The worker ships the
// libs it imports (libs/streams, libs/locking, libs/metrics): they compile beside it (dist/libs/<lib>/src), and their
// `@app/<lib>` aliases become relative paths here, as `nest build` does for the apps.
// `node scripts/build-packages.mjs common client` builds only those (in that order).
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const ALL = ['common', 'client', 'workflow', 'worker'];
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

if (PACKAGES.includes('worker')) shipSharedLibs(join(root, 'packages/worker/dist'));

/** Points the worker's imports of the shared libs (`@app/<lib>` or a lib's entry `@app/<lib>/<entry>`) at their copies in its dist. */
function shipSharedLibs(workerDist) {
  const ALIAS = /(["'])@app\/([a-z-]+)(?:\/([a-z-]+))?\1/g;
  for (const file of filesUnder(workerDist)) {
    if (!/\.(js|d\.ts)$/.test(file)) continue;
    const text = readFileSync(file, 'utf8');
    const rewritten = text.replace(ALIAS, (_, quote, lib, entry = '') => {
      let path = relative(dirname(file), join(workerDist, 'libs', lib, 'src', entry, 'index'))
        .split(sep)
        .join('/');
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

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** What requiring one module in a fresh Node process brought in. */
export interface ModulesLoaded {
  /** Every request passed to require(), from any module (e.g. 'ioredis', '@nestjs/common', './x'). */
  requests: string[];
  /** Every file in require.cache afterwards. */
  files: string[];
}

/**
 * Requires `entry` in a fresh Node process and records every require() on the way (Module._load
 * sees a request even for an ESM-only package, which require.cache may not list).
 * `sources`: load the monorepo's TypeScript sources through scripts/register-ts.js (package names
 * map to libs/*\/src); otherwise `entry` resolves from `cwd` as an installed package would.
 */
export function modulesLoadedBy(entry: string, { cwd = ROOT, sources = false }: { cwd?: string; sources?: boolean } = {}): ModulesLoaded {
  const script = `
    const Module = require('node:module');
    const requests = new Set();
    const load = Module._load;
    Module._load = function (request, ...rest) {
      requests.add(request);
      return load.call(this, request, ...rest);
    };
    require(${JSON.stringify(entry)});
    process.stdout.write(JSON.stringify({ requests: [...requests], files: Object.keys(require.cache) }));
  `;
  const args = sources ? ['-r', join(ROOT, 'scripts/register-ts.js'), '-e', script] : ['-e', script];
  const child = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 30_000 });
  if (child.status !== 0) throw new Error(`loading ${entry} failed (${child.status ?? child.signal}):\n${child.stderr}`);
  return JSON.parse(child.stdout) as ModulesLoaded;
}

/** The requests and files among `loaded` that belong to `packages` (a name, or a path fragment for files). */
export function loadedOf(loaded: ModulesLoaded, packages: { requests: RegExp; files: RegExp }): string[] {
  return [...loaded.requests.filter((request) => packages.requests.test(request)), ...loaded.files.filter((file) => packages.files.test(file))];
}

import { parseBuildId } from '@nest-durable/common';
import { readFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

/**
 * The build id a worker records on the runs it executes when its options name none: the version of the app it
 * runs in, the one thing that tells one deploy of its code from the next without anyone setting it, and failing
 * that this package's own version.
 *
 * The app is the nearest package.json with a version above the entry script (`entry`, process.argv[1]). An
 * entry inside node_modules is a tool that loaded the app (jest, a process manager's launcher): the search
 * starts above that node_modules, in the project that installed it. A version that is no valid build id
 * (hand-edited) counts as none.
 */
export function defaultBuildId(entry: string | undefined, packageDir = __dirname): string {
  const app = entry === undefined ? undefined : versionAbove(outsideNodeModules(dirname(entry)));
  return app ?? versionAbove(packageDir, '@nest-durable/worker') ?? 'unknown';
}

/** `dir`, or the directory that holds its outermost node_modules. */
function outsideNodeModules(dir: string): string {
  const at = dir.split(sep).indexOf('node_modules');
  return at === -1 ? dir : dir.split(sep).slice(0, at).join(sep) || sep;
}

/** The version of the nearest package.json at or above `dir` (named `name`, when given) that has a valid one. */
function versionAbove(dir: string, name?: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const found = packageJson(join(at, 'package.json'));
    if (found && (name === undefined || found.name === name)) {
      const version = validBuildId(found.version);
      if (version !== undefined) return version;
    }
    if (dirname(at) === at) return undefined;
  }
}

function packageJson(path: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
  } catch {
    return undefined; // none there (or unreadable): look further up
  }
}

function validBuildId(version: unknown): string | undefined {
  try {
    return parseBuildId(version);
  } catch {
    return undefined;
  }
}

// Builds only what changed. A target names its inputs (files and folders: its sources, and the configuration and
// lockfile that shape its output), the outputs it must leave and the command that makes them. After the command
// succeeds, the target's stamp records a hash of its inputs' content; the next build runs the command again only if
// that hash differs or an output is missing. Content, not mtimes: a checkout or a `touch` changes mtimes, not what
// a build makes of the sources.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** Folders no build reads: installed packages and build outputs. */
const SKIPPED_DIRS = new Set(['node_modules', 'dist']);
/** Tests beside the code: every build here excludes them (the tsconfigs' `exclude`, the dashboard's imports). */
const SKIPPED_FILE = /\.spec\.tsx?$/;

/** The hash of the inputs' content (paths relative to `root`); a missing input counts, as missing. */
export function hashInputs(root, inputs) {
  const hash = createHash('sha256');
  for (const input of inputs) {
    const path = join(root, input);
    if (!existsSync(path)) {
      hash.update(`missing ${input}\0`);
      continue;
    }
    for (const file of filesOf(path)) {
      hash.update(`${relative(root, file).split(sep).join('/')}\0`);
      hash.update(readFileSync(file));
      hash.update('\0');
    }
  }
  return hash.digest('hex');
}

function filesOf(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((entry) => {
      const child = join(path, entry);
      if (statSync(child).isDirectory()) return SKIPPED_DIRS.has(entry) ? [] : filesOf(child);
      return SKIPPED_FILE.test(entry) ? [] : [child];
    });
}

const stampOf = (stampDir, target) => join(stampDir, `${target.name}.json`);

/** Why `target` must be built (a sentence), or undefined when its outputs are there and its inputs unchanged. */
export function staleness(root, stampDir, target) {
  const missing = target.outputs.find((output) => !existsSync(join(root, output)));
  if (missing) return `${missing} is missing`;
  const stamp = stampOf(stampDir, target);
  if (!existsSync(stamp)) return 'no record of an earlier build';
  const { inputsHash } = JSON.parse(readFileSync(stamp, 'utf8'));
  if (inputsHash !== hashInputs(root, target.inputs)) return 'its sources changed';
  return undefined;
}

/**
 * Runs the command of each target that is stale (every one with `force`), in order, and records it built.
 * Returns the names of the targets it built.
 */
export function buildTargets({ root, stampDir, targets, force = false, log = () => {} }) {
  mkdirSync(stampDir, { recursive: true });
  const built = [];
  for (const target of targets) {
    const reason = force ? 'a full build' : staleness(root, stampDir, target);
    if (!reason) {
      log(`${target.name}: up to date`);
      continue;
    }
    log(`${target.name}: building (${reason})`);
    // A build that stops half-way leaves no stamp behind, whatever its inputs' hash.
    rmSync(stampOf(stampDir, target), { force: true });
    const inputsHash = hashInputs(root, target.inputs);
    const [command, ...args] = target.command;
    execFileSync(command, args, { cwd: root, stdio: 'inherit' });
    writeFileSync(stampOf(stampDir, target), `${JSON.stringify({ inputsHash, builtAt: new Date().toISOString() })}\n`);
    built.push(target.name);
  }
  return built;
}

import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually } from './poll';

const ROOT = join(__dirname, '..', '..');
/** In dependency order, as scripts/build-packages.mjs builds them. */
const PACKAGES = ['common', 'client', 'workflow', 'worker', 'testing'] as const;
export type PackageName = (typeof PACKAGES)[number];

/** Held while one suite builds; holds the holder's pid, so a lock left by a killed run is taken over. */
const LOCK = join(ROOT, 'packages', '.test-build.lock');
/** Which packages this run has built: `{ run, built }`. */
const STAMP = join(ROOT, 'packages', '.test-build.json');

/**
 * Builds the published packages `names` (with those they depend on before them) to their dist, once per `jest`
 * run: suites run in parallel workers, and a second build would delete a dist that another suite's processes are
 * running from. A package this run built already is not built again; one not yet built is built beside them.
 */
export async function buildPackages(...names: PackageName[]): Promise<void> {
  const run = process.env.WF_TEST_RUN_ID ?? `pid-${process.pid}`;
  await eventually('the lock on building the packages', async () => tryLock(), 600_000);
  try {
    const stamp = readStamp();
    const built = stamp?.run === run ? stamp.built : [];
    const last = Math.max(...names.map((name) => PACKAGES.indexOf(name)));
    const missing = PACKAGES.slice(0, last + 1).filter((name) => !built.includes(name));
    if (missing.length === 0) return;
    await promisify(execFile)(process.execPath, [join(ROOT, 'scripts/build-packages.mjs'), ...missing], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
    writeFileSync(STAMP, JSON.stringify({ run, built: [...built, ...missing] }));
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function tryLock(): boolean {
  try {
    mkdirSync(LOCK);
    writeFileSync(join(LOCK, 'pid'), String(process.pid));
    return true;
  } catch {
    if (!holderAlive()) rmSync(LOCK, { recursive: true, force: true });
    return false;
  }
}

function holderAlive(): boolean {
  try {
    process.kill(Number(readFileSync(join(LOCK, 'pid'), 'utf8')), 0);
    return true;
  } catch (error) {
    // No pid file: the holder is between mkdir and writing it, unless that was long ago (it was killed there).
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? 0) < 10_000;
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readStamp(): { run: string; built: PackageName[] } | undefined {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8'));
  } catch {
    return undefined;
  }
}

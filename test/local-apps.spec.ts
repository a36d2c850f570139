import { afterAll, afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { TARGETS } from '../scripts/build.mjs';
import { type BuildTarget, buildTargets } from '../scripts/incremental-build.mjs';
import { forget, recordApps, runs, takeOver } from '../scripts/local-apps.mjs';
import { exitOf } from './support/processes';

/** `npm start`'s record of itself and its apps, and what a later start does with it: real processes. */
describe('local apps (npm start)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'local-apps-'));
  const file = join(dir, 'apps.json');
  const journal = join(dir, 'journal');
  const started: ChildProcess[] = [];

  afterEach(() => {
    for (const child of started) child.kill('SIGKILL');
    started.length = 0;
    forget(file);
    rmSync(journal, { force: true });
  });

  /**
   * A process with `entry` on its command line, as an app's entry is, that runs until signalled. On SIGTERM it
   * writes `<name> stopping` to the journal and, `drainMs` later, `<name> stopped`, and exits; `ignoresTerm`, it
   * ignores SIGTERM. Resolves once it runs its handler.
   */
  const app = async (name: string, entry: string, { drainMs = 0, ignoresTerm = false } = {}) => {
    const onTerm = ignoresTerm
      ? '() => {}'
      : `() => { fs.appendFileSync(${JSON.stringify(journal)}, '${name} stopping\\n'); setTimeout(() => { fs.appendFileSync(${JSON.stringify(journal)}, '${name} stopped\\n'); process.exit(0); }, ${drainMs}); }`;
    const code = `const fs = require('node:fs'); process.on('SIGTERM', ${onTerm}); console.log('ready'); setInterval(() => {}, 1000)`;
    const child = spawn(process.execPath, ['-e', code, entry], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.push(child);
    await new Promise((resolve) => child.stdout!.once('data', resolve));
    return child;
  };
  /** The record a start wrote, as from another start (the launcher: a process that is not running now). */
  const recordedBy = (launcher: { pid: number; entry: string }, apps: { name: string; pid: number; entry: string }[]) =>
    writeFileSync(file, JSON.stringify({ launcher, apps }));
  const GONE = { pid: 2 ** 22 + 1, entry: '/app/scripts/start-local.mjs' };

  it('stops the apps a killed start left running, each gone before the one started before it is signalled', async () => {
    const coordinator = await app('coordinator', '/app/dist/coordinator-main.js');
    const worker = await app('worker', '/app/dist/worker-main.js', { drainMs: 300 });
    recordedBy(GONE, [
      { name: 'coordinator', pid: coordinator.pid!, entry: '/app/dist/coordinator-main.js' },
      { name: 'worker', pid: worker.pid!, entry: '/app/dist/worker-main.js' },
    ]);
    const exits = [coordinator, worker].map((child) => exitOf(child));
    const said: string[] = [];
    await takeOver(file, (line: string) => said.push(line));
    expect(await Promise.all(exits)).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
    // Signalled at once, the coordinator would have been stopping while the worker drained.
    expect(readFileSync(journal, 'utf8')).toBe('worker stopping\nworker stopped\ncoordinator stopping\ncoordinator stopped\n');
    expect(said).toEqual([
      `stopping the worker left running by an earlier start (pid ${worker.pid})`,
      `stopping the coordinator left running by an earlier start (pid ${coordinator.pid})`,
    ]);
    // The record is this start's now, with no apps yet.
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ launcher: { pid: process.pid, entry: basename(process.argv[1]) }, apps: [] });
  });

  it('refuses while the start that wrote the record still runs, and leaves its apps alone', async () => {
    const launcher = await app('launcher', '/app/scripts/start-local.mjs');
    const worker = await app('worker', '/app/dist/worker-main.js');
    recordedBy({ pid: launcher.pid!, entry: '/app/scripts/start-local.mjs' }, [{ name: 'worker', pid: worker.pid!, entry: '/app/dist/worker-main.js' }]);
    await expect(takeOver(file, () => undefined)).rejects.toThrow(`another start (pid ${launcher.pid}) is running from this checkout: stop it first`);
    expect(runs(worker.pid!, '/app/dist/worker-main.js')).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8')).launcher.pid).toBe(launcher.pid);
  });

  it('leaves alone a process that reused a recorded pid, and a pid no process has', async () => {
    const other = await app('other', '/somewhere/else.js');
    recordedBy(GONE, [
      { name: 'coordinator', pid: other.pid!, entry: '/app/dist/coordinator-main.js' },
      { name: 'worker', pid: 2 ** 22 + 2, entry: '/app/dist/worker-main.js' },
    ]);
    await takeOver(file, () => undefined);
    expect(runs(other.pid!, '/somewhere/else.js')).toBe(true);
  });

  it('kills an app that does not stop on SIGTERM once its grace is over', async () => {
    const stubborn = await app('worker', '/app/dist/worker-main.js', { ignoresTerm: true });
    recordedBy(GONE, [{ name: 'worker', pid: stubborn.pid!, entry: '/app/dist/worker-main.js' }]);
    const exit = exitOf(stubborn);
    await takeOver(file, () => undefined, 300);
    expect(await exit).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('records this start with its apps, and forgets it when it stops', () => {
    recordApps(file, [{ name: 'coordinator', pid: 1234, entry: '/app/dist/coordinator-main.js' }]);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      launcher: { pid: process.pid, entry: basename(process.argv[1]) },
      apps: [{ name: 'coordinator', pid: 1234, entry: '/app/dist/coordinator-main.js' }],
    });
    forget(file);
    expect(existsSync(file)).toBe(false);
  });
});

/** The build `npm start` runs first (scripts/build.mjs): only the targets whose inputs changed, real commands run. */
describe('the build before a start (only what changed)', () => {
  const root = mkdtempSync(join(tmpdir(), 'incremental-build-'));
  const stampDir = join(root, 'dist', '.build-stamps');
  const journal = join(root, 'journal');
  /** A target whose command notes each run of it in the journal and writes its output (or, `failing`, fails first). */
  const target = (name: string, inputs: string[], { failing = false } = {}): BuildTarget => ({
    name,
    inputs,
    outputs: [`out/${name}.js`],
    command: [
      process.execPath,
      '-e',
      `const fs = require('node:fs'); fs.appendFileSync('journal', '${name}\\n'); if (${failing}) process.exit(1); fs.mkdirSync('out', { recursive: true }); fs.writeFileSync('out/${name}.js', '')`,
    ],
  });
  const write = (path: string, text: string) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  };
  const build = (targets: BuildTarget[]) => buildTargets({ root, stampDir, targets });
  const ran = () => (existsSync(journal) ? readFileSync(journal, 'utf8').split('\n').filter(Boolean) : []);
  const app = target('app', ['package.json', 'src']);
  const other = target('other', ['package.json', 'other']);

  beforeEach(() => {
    rmSync(root, { recursive: true, force: true });
    write('package.json', '{"dependencies":{}}');
    write('src/main.ts', 'export const a = 1;');
    write('other/main.ts', 'export const b = 1;');
  });

  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('builds each target the first time, then none while nothing changed, a touch (new mtimes) included', () => {
    expect(build([app, other])).toEqual(['app', 'other']);
    expect(build([app, other])).toEqual([]);
    const later = new Date(Date.now() + 60_000);
    utimesSync(join(root, 'src/main.ts'), later, later);
    expect(build([app, other])).toEqual([]);
    expect(ran()).toEqual(['app', 'other']);
  });

  it('builds again only the targets whose sources changed: an edit, a new file, a removed file', () => {
    build([app, other]);
    write('src/main.ts', 'export const a = 2;');
    expect(build([app, other])).toEqual(['app']);
    write('other/extra.ts', 'export const c = 1;');
    expect(build([app, other])).toEqual(['other']);
    rmSync(join(root, 'other/extra.ts'));
    expect(build([app, other])).toEqual(['other']);
  });

  it('builds again every target after a change to an input they share (the dependencies, a tsconfig)', () => {
    build([app, other]);
    write('package.json', '{"dependencies":{"left-pad":"1.3.0"}}');
    expect(build([app, other])).toEqual(['app', 'other']);
  });

  it('ignores the tests beside the code and the build outputs, which no build reads', () => {
    build([app]);
    write('src/main.spec.ts', 'it("works", () => {});');
    write('src/dist/main.js', 'exports.a = 1;');
    expect(build([app])).toEqual([]);
  });

  it('builds again a target whose output is gone, or whose last build failed (its inputs back as before)', () => {
    build([app]);
    rmSync(join(root, 'out/app.js'));
    expect(build([app])).toEqual(['app']);
    write('src/main.ts', 'export const a = 2;');
    expect(() => build([target('app', ['package.json', 'src'], { failing: true })])).toThrow();
    write('src/main.ts', 'export const a = 1;');
    expect(build([app])).toEqual(['app']);
  });

  it("names inputs that are there: the real targets' sources, configuration and lockfile", () => {
    const repo = join(__dirname, '..');
    const missing = TARGETS.flatMap((each) => each.inputs.filter((input) => !existsSync(join(repo, input))).map((input) => `${each.name}: ${input}`));
    expect(missing).toEqual([]);
  });
});

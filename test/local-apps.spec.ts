import { afterEach, describe, expect, it } from '@jest/globals';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recordApps, runs, stopLeftoverApps } from '../scripts/local-apps.mjs';
import { exitOf } from './support/processes';

/** `npm start`'s record of its apps, and how a later start stops the ones a killed start left running: real processes. */
describe('local apps (npm start)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'local-apps-'));
  const file = join(dir, 'apps.json');
  const started: ChildProcess[] = [];

  afterEach(() => {
    for (const child of started) child.kill('SIGKILL');
    started.length = 0;
    rmSync(file, { force: true });
  });

  /** A process that runs until signalled, with `entry` on its command line as an app's entry is. */
  const app = (entry: string) => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', entry], { stdio: 'ignore' });
    started.push(child);
    return child;
  };

  it('stops the recorded apps still running, the last started first, and forgets them', async () => {
    const coordinator = app('/app/dist/coordinator-main.js');
    const worker = app('/app/dist/worker-main.js');
    recordApps(file, [
      { name: 'coordinator', pid: coordinator.pid!, entry: '/app/dist/coordinator-main.js' },
      { name: 'worker', pid: worker.pid!, entry: '/app/dist/worker-main.js' },
    ]);
    const exits = [coordinator, worker].map((child) => exitOf(child));
    const said: string[] = [];
    await stopLeftoverApps(file, (line: string) => said.push(line));
    expect(await Promise.all(exits)).toEqual([
      { code: null, signal: 'SIGTERM' },
      { code: null, signal: 'SIGTERM' },
    ]);
    // Each is gone before the next is signalled.
    expect(said).toEqual([
      `stopping the worker left running by an earlier start (pid ${worker.pid})`,
      `stopping the coordinator left running by an earlier start (pid ${coordinator.pid})`,
    ]);
    expect(existsSync(file)).toBe(false);
  });

  it('leaves alone a process that reused a recorded pid, and a pid no process has', async () => {
    const other = app('/somewhere/else.js');
    recordApps(file, [
      { name: 'coordinator', pid: other.pid!, entry: '/app/dist/coordinator-main.js' },
      { name: 'worker', pid: 2 ** 22 + 1, entry: '/app/dist/worker-main.js' },
    ]);
    await stopLeftoverApps(file, () => undefined);
    expect(runs(other.pid!, '/somewhere/else.js')).toBe(true);
    expect(existsSync(file)).toBe(false);
  });

  it('kills an app that does not stop on SIGTERM once its grace is over', async () => {
    const stubborn = spawn(
      process.execPath,
      ['-e', "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000)", '/app/dist/worker-main.js'],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    started.push(stubborn);
    // Its SIGTERM handler is in place once it says so.
    await new Promise((resolve) => stubborn.stdout!.once('data', resolve));
    recordApps(file, [{ name: 'worker', pid: stubborn.pid!, entry: '/app/dist/worker-main.js' }]);
    const exit = exitOf(stubborn);
    await stopLeftoverApps(file, () => undefined, 300);
    expect(await exit).toEqual({ code: null, signal: 'SIGKILL' });
  });
});

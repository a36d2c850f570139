// The apps `npm start` runs, recorded in a file so that a start after one that was killed (SIGKILL: its
// apps live on and hold their ports) stops them before it starts its own.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

/** Whether `pid` is still the process that runs `entry`, and not another that reused its pid. */
export function runs(pid, entry) {
  try {
    return execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).includes(entry);
  } catch {
    return false; // ps exits with 1 when there is no such process
  }
}

/** Records the running apps, in the order they started: [{ name, pid, entry }]. */
export function recordApps(file, apps) {
  writeFileSync(file, JSON.stringify(apps.map(({ name, pid, entry }) => ({ name, pid, entry }))));
}

/**
 * Stops the apps a file records that still run, the last started first (the worker releases its claims
 * before the coordinator goes), as a shutdown would: SIGTERM, then SIGKILL after `graceMs`.
 */
export async function stopLeftoverApps(file, log, graceMs = 20_000) {
  let apps;
  try {
    apps = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return; // no file: the last start stopped cleanly, or there was none
  }
  for (const { name, pid, entry } of [...apps].reverse()) {
    if (!runs(pid, entry)) continue;
    log(`stopping the ${name} left running by an earlier start (pid ${pid})`);
    for (const signal of ['SIGTERM', 'SIGKILL']) {
      process.kill(pid, signal);
      const deadline = Date.now() + graceMs;
      while (runs(pid, entry) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      if (!runs(pid, entry)) break;
    }
  }
  rmSync(file, { force: true });
}

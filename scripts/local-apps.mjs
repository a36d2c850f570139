// What `npm start` runs, recorded in a file of its checkout: the start itself and its apps. A start refuses
// to run beside another that is still running (they would share the embedded database and the ports), and
// stops the apps one that was killed (SIGKILL) left running: they would hold the ports and answer its
// readiness checks.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

/** Whether `pid` is still the process that runs `entry`, and not another that reused its pid. */
export function runs(pid, entry) {
  let command;
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    try {
      command = execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return false; // no /proc entry and ps exits with 1 (or there is no ps): no such process
    }
  }
  return command.includes(entry);
}

/** This process, as a record names it: by its script's file name (its command line may give the path relative). */
const self = () => ({ pid: process.pid, entry: basename(process.argv[1]) });

/**
 * Takes the record for this start: refuses (throws) while the start that wrote it still runs, stops the apps
 * it names that still run, the last started first (the worker releases its claims before the coordinator
 * goes), as a shutdown would: SIGTERM, then SIGKILL after `graceMs`.
 */
export async function takeOver(file, log, graceMs = 20_000) {
  let record = { apps: [] };
  try {
    record = JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    // no record: the last start stopped cleanly, or there was none
  }
  const { launcher, apps } = record;
  if (launcher && launcher.pid !== process.pid && runs(launcher.pid, launcher.entry)) {
    throw new Error(`another start (pid ${launcher.pid}) is running from this checkout: stop it first`);
  }
  for (const { name, pid, entry } of [...apps].reverse()) {
    if (!runs(pid, entry)) continue;
    log(`stopping the ${name} left running by an earlier start (pid ${pid})`);
    for (const signal of ['SIGTERM', 'SIGKILL']) {
      try {
        process.kill(pid, signal);
      } catch {
        break; // gone meanwhile
      }
      const deadline = Date.now() + graceMs;
      while (runs(pid, entry) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      if (!runs(pid, entry)) break;
    }
  }
  recordApps(file, []);
}

/** Records this start and its running apps, in the order they started: [{ name, pid, entry }]. */
export function recordApps(file, apps) {
  writeFileSync(file, JSON.stringify({ launcher: self(), apps: apps.map(({ name, pid, entry }) => ({ name, pid, entry })) }));
}

/** This start is over: its record goes with it. */
export function forget(file) {
  rmSync(file, { force: true });
}

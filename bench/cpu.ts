// Where the machine's CPU went during a measurement: the apps the bench started, PostgreSQL's and
// Redis's processes (found by name), and the machine as a whole, from /proc.
import { readdirSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';

export const CORES = cpus().length;

export interface CpuShares {
  /** Busy share of all cores over the window, 0..1. */
  machine: number;
  /** CPU-seconds per second (1 = one core busy) of each group. */
  groups: Record<string, number>;
}

/** user + system CPU seconds of a process, or 0 if it is gone. */
function processSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

function pidsNamed(name: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fields.map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

/**
 * Samples CPU use between `start()` and `stop()`. `groups` maps a label to the pids of the bench's own
 * processes; PostgreSQL and Redis are every process named `postgres` / `redis-server` (a backend
 * that ends meanwhile drops out of the sum, so theirs is a lower bound).
 */
export class CpuSampler {
  private before = new Map<number, number>();
  private machineBefore = machineTicks();
  private startedAt = 0;

  constructor(private readonly groups: Record<string, () => number[]>) {}

  private allGroups(): Record<string, number[]> {
    return {
      ...Object.fromEntries(Object.entries(this.groups).map(([label, pids]) => [label, pids()])),
      postgres: pidsNamed('postgres'),
      redis: pidsNamed('redis-server'),
    };
  }

  start(): void {
    this.before = new Map(
      Object.values(this.allGroups())
        .flat()
        .map((pid) => [pid, processSeconds(pid)]),
    );
    this.machineBefore = machineTicks();
    this.startedAt = performance.now();
  }

  stop(): CpuShares {
    const seconds = (performance.now() - this.startedAt) / 1000;
    const machine = machineTicks();
    const groups: Record<string, number> = {};
    for (const [label, pids] of Object.entries(this.allGroups())) {
      const used = pids.reduce((sum, pid) => sum + Math.max(0, processSeconds(pid) - (this.before.get(pid) ?? 0)), 0);
      groups[label] = used / seconds;
    }
    const busy = (machine.busy - this.machineBefore.busy) / Math.max(1, machine.total - this.machineBefore.total);
    // The rest of the machine's busy time: the bench itself, the kernel, anything else running.
    groups.other = Math.max(0, busy * CORES - Object.values(groups).reduce((sum, used) => sum + used, 0));
    return { machine: busy, groups };
  }
}

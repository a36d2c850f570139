import { setTimeout as delay } from 'node:timers/promises';
import { Client } from 'pg';
import type { AppProcess } from '../../test/support/processes';
import type { ModeCluster, Servers } from './cluster';
import { type Mode, TIMING } from './options';
import type { Violations } from './violations';

const TERMINATE_ROUNDS = 3;
const TERMINATE_EVERY_MS = 500;

export const MAJOR_FAULTS = ['sigstop-worker', 'terminate-connections', 'kill-coordinator', 'restart-redis', 'crash-postgres', 'failover-postgres'] as const;
export type FaultKind = 'kill-worker' | (typeof MAJOR_FAULTS)[number];

export const FAULT_LABELS: Record<FaultKind, string> = {
  'kill-worker': 'worker kill -9',
  'sigstop-worker': `worker SIGSTOP ${TIMING.stopMs / 1000} s, SIGCONT`,
  'terminate-connections': `pg_terminate_backend of the coordinator's connections, ${TERMINATE_ROUNDS}× ${TERMINATE_EVERY_MS} ms apart`,
  'kill-coordinator': 'coordinator kill -9, restart',
  'restart-redis': `Redis kill -9, ${TIMING.redisDownMs / 1000} s down, restart (empty)`,
  'crash-postgres': 'PostgreSQL immediate shutdown, restart',
  'failover-postgres': 'PostgreSQL primary kill -9, synchronous standby promoted',
};

const MAJOR_GAP_MS = 6_000;

export interface PlannedFault {
  kind: FaultKind;
  atMs: number;
}

/** What the soak did, when (epoch ms), to whom, and how long the fault itself lasted. */
export interface InjectedFault {
  kind: FaultKind;
  at: number;
  target?: string;
  downMs?: number;
  detail?: string;
}

/**
 * The major faults evenly spread over the load window, and a worker kill every few seconds except
 * near them, so that each major fault's recovery is measured on its own.
 */
export function planFaults(mode: Mode, loadMs: number): PlannedFault[] {
  const majors = MAJOR_FAULTS.filter((kind) => kind !== 'restart-redis' || mode !== 'http');
  // At least MAJOR_GAP_MS apart, even past the end of a short load, so that recoveries do not overlap.
  const planned: PlannedFault[] = [];
  majors.forEach((kind, i) => {
    const spread = loadMs * (0.12 + (0.7 * i) / Math.max(1, majors.length - 1));
    planned.push({ kind, atMs: Math.max(spread, i === 0 ? 0 : planned[i - 1].atMs + MAJOR_GAP_MS) });
  });
  const quiet = (atMs: number) =>
    planned.some((major) => atMs > major.atMs - 1_500 && atMs < major.atMs + 3_500 + (major.kind === 'sigstop-worker' ? TIMING.stopMs : 0));
  for (let atMs = 3_000; atMs < loadMs - 1_000; atMs += TIMING.killEveryMs) {
    if (!quiet(atMs)) planned.push({ kind: 'kill-worker', atMs });
  }
  return planned.sort((a, b) => a.atMs - b.atMs);
}

/** Injects the planned faults on schedule into one mode's processes and the servers. */
export class FaultInjector {
  readonly injected: InjectedFault[] = [];
  private stopped: AppProcess | undefined;
  private readonly pending: Promise<void>[] = [];

  constructor(
    private readonly cluster: ModeCluster,
    private readonly servers: Servers,
    /** The mode's database on the primary of the moment. */
    private readonly databaseUrl: () => string,
    private readonly pick: () => number,
    private readonly violations: Violations,
  ) {}

  async run(plan: PlannedFault[], startedAt: number, signal: AbortSignal): Promise<void> {
    for (const fault of plan) {
      const wait = startedAt + fault.atMs - Date.now();
      if (wait > 0) await delay(wait, undefined, { signal }).catch(() => undefined);
      if (signal.aborted) break;
      await this.inject(fault.kind).catch((error: Error) =>
        this.violations.add('faults are injected', `${FAULT_LABELS[fault.kind]} failed: ${error.stack ?? error.message}`),
      );
    }
    await Promise.all(this.pending);
  }

  private async inject(kind: FaultKind): Promise<void> {
    // A worker fault happens when its victim is chosen; the others at once.
    const victim = kind === 'kill-worker' || kind === 'sigstop-worker' ? await this.victim(kind === 'kill-worker' ? 'any' : 'longest') : undefined;
    const at = Date.now();
    const record = (fields: Omit<InjectedFault, 'kind' | 'at'> = {}) => void this.injected.push({ kind, at, target: victim?.name, ...fields });
    switch (kind) {
      case 'kill-worker':
        await this.cluster.killWorker(victim!);
        return record();
      case 'sigstop-worker': {
        this.stopped = victim!;
        victim!.signal('SIGSTOP');
        record({ downMs: TIMING.stopMs });
        this.pending.push(
          delay(TIMING.stopMs).then(() => {
            victim!.signal('SIGCONT');
            this.stopped = undefined;
          }),
        );
        return;
      }
      case 'terminate-connections': {
        // Three rounds, so that some connection is likely caught in the middle of a transaction.
        let terminated = 0;
        for (let round = 0; round < TERMINATE_ROUNDS; round++) {
          if (round > 0) await delay(TERMINATE_EVERY_MS);
          terminated += await this.terminateConnections();
        }
        return record({ detail: `${terminated} connections` });
      }
      case 'kill-coordinator':
        await this.cluster.killCoordinator();
        return record({ downMs: Date.now() - at });
      case 'restart-redis':
        await this.servers.restartRedis(TIMING.redisDownMs);
        return record({ downMs: Date.now() - at });
      case 'crash-postgres':
        await this.servers.crashPostgres();
        return record({ downMs: Date.now() - at });
      case 'failover-postgres':
        await this.servers.failoverPostgres();
        return record({ downMs: Date.now() - at });
    }
  }

  /**
   * A ready worker that is not the stopped one and, if any does (per the database, when it answers),
   * holds runs: any of those, or the one holding the run with the longest steps (so that the
   * run is still running, under a newer claim, when a stopped worker wakes up).
   */
  private async victim(among: 'any' | 'longest'): Promise<AppProcess> {
    const candidates = [...this.cluster.workers.values()].filter(
      (worker) => worker !== this.stopped && worker.alive && this.cluster.lifetimes.has(worker.name),
    );
    if (candidates.length === 0) throw new Error('no running worker to pick');
    const holders = await this.query<{ worker: string }>(
      `SELECT claimed_by AS worker FROM runs WHERE status = 'running' ORDER BY (input->>'stepMs')::int DESC, random()`,
    ).then(
      (rows) => rows.map((row) => row.worker),
      (): string[] => [],
    );
    const busy = candidates.filter((worker) => holders.includes(worker.name));
    if (among === 'longest' && busy.length > 0) return busy.sort((a, b) => holders.indexOf(a.name) - holders.indexOf(b.name))[0];
    const pool = busy.length > 0 ? busy : candidates;
    return pool[Math.floor(this.pick() * pool.length)];
  }

  /** Every session of the mode's database but this one: the coordinator's pool, its LISTEN session and its leader lock. */
  private async terminateConnections(): Promise<number> {
    const [row] = await this.query<{ terminated: number }>(
      'SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS terminated FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return row.terminated;
  }

  /** One statement on a connection of its own to the mode's database. */
  private async query<T>(sql: string): Promise<T[]> {
    const client = new Client({ connectionString: this.databaseUrl(), connectionTimeoutMillis: 2_000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query(sql)).rows as T[];
    } finally {
      await client.end();
    }
  }
}

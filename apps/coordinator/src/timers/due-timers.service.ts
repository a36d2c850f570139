import { NotificationListener, RUNS_DUE_CHANNEL } from '@app/outbox';
import { Database, databaseNow, type DueRun, SCHEDULE_QUEUE, upcomingDueTimes } from '@app/persistence';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { DueSchedule } from './due-schedule';

/** This process's clock, epoch ms with a fraction. */
const localNow = () => performance.timeOrigin + performance.now();

const CLOCK_SAMPLES = 5;

/** How to turn a database time into a moment on this process's clock. */
interface ClockFit {
  /** Database clock minus ours. */
  offsetMs: number;
  /** How much later than the converted time to act, so the database's now() has surely passed it. */
  marginMs: number;
}

/**
 * Acts the moment runs come due by time (a sleep ends, runAt, a retry wait, an event or child
 * timeout) rather than on the next poll. Holds the upcoming due times within TIMER_HORIZON_MS
 * (at most TIMER_MAX_ENTRIES), loaded from `runs` and kept current by the wf_runs_due NOTIFY; it
 * reloads every half horizon, after the LISTEN session reconnects (notifications were lost) and when
 * capacity cut the schedule short. At a due time it tells RunLifecycle how many runs of each queue
 * came due (which wakes as many of this process's claim long-polls of that queue: no herd), and tells
 * its due handlers (the outbox wake-up, which one coordinator leads). Every coordinator holds its own schedule for its own
 * claimers; the polls stay as the safety net. Schedules' fire times are held the same way (queue
 * SCHEDULE_QUEUE), overdue ones too, and handed to the schedule handlers when they come.
 */
@Injectable()
export class DueTimers implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DueTimers.name);
  private readonly schedule: DueSchedule;
  private readonly handlers = new Set<(runs: number) => void>();
  private readonly scheduleHandlers = new Set<(scheduleIds: string[]) => void>();
  private clock: ClockFit = { offsetMs: 0, marginMs: 1 };
  private timer: NodeJS.Timeout | undefined;
  private armedFor: number | undefined;
  private reloadTimer: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  private reloadAgain = false;
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly db: Database,
    private readonly listener: NotificationListener,
    private readonly lifecycle: RunLifecycle,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {
    this.schedule = new DueSchedule(config.timerMaxEntries);
  }

  onApplicationBootstrap(): void {
    this.unsubscribe = this.listener.subscribe(RUNS_DUE_CHANNEL, {
      notified: (payload) => this.notified(payload),
      reconnected: () => this.reload(),
    });
    this.reloadTimer = setInterval(() => this.reload(), this.config.timerHorizonMs / 2);
    this.reload();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    clearInterval(this.reloadTimer);
    clearTimeout(this.timer);
    await this.reloading;
  }

  /** Calls `handler` with how many runs came due, each time some do; returns the unsubscribe. */
  onDue(handler: (runs: number) => void): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  /** Calls `handler` with the ids of the schedules whose fire time came, each time some do; returns the unsubscribe. */
  onSchedulesDue(handler: (scheduleIds: string[]) => void): () => void {
    this.scheduleHandlers.add(handler);
    return () => this.scheduleHandlers.delete(handler);
  }

  /** How many due times it holds now. */
  get held(): number {
    return this.schedule.size;
  }

  /**
   * Fits the clock and reads the due times again, now; resolves once done. For a database clock that jumped: the
   * test kit (@nest-durable/testing) calls it after each step of skipTime moves its clock forward. Nothing in
   * production does (a real clock does not jump; the periodic reload follows its drift).
   */
  async resync(): Promise<void> {
    this.reload();
    while (this.reloading) await this.reloading;
  }

  private notified(payload: string): void {
    const run = parseDuePayload(payload);
    // Beyond the horizon: a later reload (every half horizon) reads it in time.
    if (!run || run.at > localNow() + this.clock.offsetMs + this.config.timerHorizonMs) return;
    this.schedule.add(run);
    this.arm();
  }

  /** One reload at a time; one asked for meanwhile runs after it (it may need a later snapshot). */
  private reload(): void {
    if (this.stopped) return;
    if (this.reloading) {
      this.reloadAgain = true;
      return;
    }
    this.reloading = this.reloadOnce()
      .catch((error: Error) => this.logger.warn(`loading due times failed (${error.message}); the polls cover until the next try`))
      .finally(() => {
        this.reloading = undefined;
        if (this.reloadAgain) {
          this.reloadAgain = false;
          this.reload();
        }
      });
  }

  private async reloadOnce(): Promise<void> {
    this.clock = await this.fitClock();
    const limit = this.config.timerMaxEntries;
    this.schedule.beginReload();
    let loaded: DueRun[] | undefined;
    try {
      loaded = await upcomingDueTimes(this.db, this.config.timerHorizonMs, limit);
    } finally {
      this.schedule.endReload(loaded, loaded && loaded.length >= limit ? loaded[loaded.length - 1].at : undefined);
    }
    this.arm();
  }

  /** The round trip with the least delay bounds the offset best (half of it is the uncertainty). */
  private async fitClock(): Promise<ClockFit> {
    let best: { roundTripMs: number; offsetMs: number } | undefined;
    for (let i = 0; i < CLOCK_SAMPLES; i++) {
      const sentAt = localNow();
      const databaseAt = await databaseNow(this.db);
      const receivedAt = localNow();
      const roundTripMs = receivedAt - sentAt;
      if (!best || roundTripMs < best.roundTripMs) best = { roundTripMs, offsetMs: databaseAt - (sentAt + receivedAt) / 2 };
    }
    return { offsetMs: best!.offsetMs, marginMs: best!.roundTripMs / 2 + 0.25 };
  }

  /** One timer, for the soonest due time. */
  private arm(): void {
    const next = this.schedule.next;
    const fireAt = next && !this.stopped ? next.at - this.clock.offsetMs + this.clock.marginMs : undefined;
    if (fireAt === this.armedFor) return;
    clearTimeout(this.timer);
    this.armedFor = fireAt;
    // Node truncates a delay to whole milliseconds: round up, or the timer runs early and again 1 ms later.
    if (fireAt !== undefined) this.timer = setTimeout(() => this.fire(), Math.max(0, Math.ceil(fireAt - localNow())));
  }

  private fire(): void {
    this.armedFor = undefined;
    // A timer can run a little early (Node counts from its cached loop time): then nothing is taken
    // and arm() waits for the rest.
    const due = this.schedule.takeDue(localNow() + this.clock.offsetMs - this.clock.marginMs);
    if (due.length > 0) {
      const perQueue = new Map<string, number>();
      const schedules: string[] = [];
      for (const run of due) {
        if (run.queue === SCHEDULE_QUEUE) schedules.push(run.runId);
        else perQueue.set(run.queue, (perQueue.get(run.queue) ?? 0) + 1);
      }
      this.lifecycle.becameReady(perQueue);
      const runs = due.length - schedules.length;
      if (runs > 0) for (const handler of this.handlers) handler(runs);
      if (schedules.length > 0) for (const handler of this.scheduleHandlers) handler(schedules);
      // Capacity cut the last load short: read the next due times before firing reaches the cut.
      const cut = this.schedule.completeBefore !== Infinity && this.schedule.size < this.schedule.capacity / 2;
      if (cut && !this.reloading) this.reload();
    }
    this.arm();
  }
}

/** `<due, epoch ms> <run id> <queue>` (see the due-timers migration). */
export function parseDuePayload(payload: string): DueRun | undefined {
  const afterAt = payload.indexOf(' ');
  const afterId = payload.indexOf(' ', afterAt + 1);
  if (afterAt < 0 || afterId < 0) return undefined;
  const at = Number(payload.slice(0, afterAt));
  const queue = payload.slice(afterId + 1);
  return Number.isFinite(at) && queue ? { at, runId: payload.slice(afterAt + 1, afterId), queue } : undefined;
}

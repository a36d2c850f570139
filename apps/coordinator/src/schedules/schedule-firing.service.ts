import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DueTimers } from '../timers/due-timers.service';
import { SchedulesService } from './schedules.service';

/** A firing that failed is tried again this much later, doubling with each failure in a row up to the cap... */
const RETRY_FAILED_MS = 1_000;
const RETRY_FAILED_MAX_MS = 60_000;
/** ...and one that found another coordinator's firing holding the schedule (it usually commits within a few ms) this much. */
const RETRY_BUSY_MS = 100;

/**
 * Fires schedules when the due timers say their fire time came (every coordinator holds the timers,
 * so it is acted on at the moment, not on a poll; whoever locks the row first fires it). One firing
 * per schedule at a time in this process; a fire time announced meanwhile (a catch-up continuing)
 * runs after it. A firing that failed, or that met another coordinator's firing in progress (which
 * may yet fail, or die with its coordinator), is tried again shortly, until the schedule is no longer
 * due; the timers' reload (every half TIMER_HORIZON_MS) reads every overdue schedule too. A schedule
 * whose firing keeps failing (say, its workflow's runs cannot be inserted) backs off exponentially to
 * a minute, logged at each try; announcements while it waits do not cut the wait short.
 */
@Injectable()
export class ScheduleFiring implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(ScheduleFiring.name);
  private readonly firing = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly retries = new Map<string, NodeJS.Timeout>();
  /** Failures in a row per schedule, while its firing keeps failing. */
  private readonly failures = new Map<string, number>();
  private unsubscribe: (() => void) | undefined;
  private stopped = false;

  constructor(
    private readonly timers: DueTimers,
    private readonly schedules: SchedulesService,
  ) {}

  onApplicationBootstrap(): void {
    this.unsubscribe = this.timers.onSchedulesDue((ids) => {
      for (const id of ids) this.fire(id);
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    for (const timer of this.retries.values()) clearTimeout(timer);
    this.retries.clear();
    this.failures.clear();
    await Promise.all(this.firing.values());
  }

  private fire(id: string): void {
    if (this.stopped) return;
    // Backing off after failures: the retry fires it.
    if (this.failures.has(id) && this.retries.has(id)) return;
    clearTimeout(this.retries.get(id));
    this.retries.delete(id);
    if (this.firing.has(id)) {
      this.again.add(id);
      return;
    }
    const firing = this.schedules
      .fire(id)
      .then(
        (outcome) => {
          if (outcome === 'busy') return RETRY_BUSY_MS;
          this.failures.delete(id);
          return undefined;
        },
        (error: Error) => {
          const failures = (this.failures.get(id) ?? 0) + 1;
          this.failures.set(id, failures);
          const retryInMs = Math.min(RETRY_FAILED_MS * 2 ** (failures - 1), RETRY_FAILED_MAX_MS);
          this.logger.warn(`firing schedule ${id} failed ${failures} time(s) in a row (${error.message}); trying again in ${retryInMs} ms`);
          return retryInMs;
        },
      )
      .then((retryInMs) => {
        this.firing.delete(id);
        if (this.again.delete(id)) this.fire(id);
        else if (retryInMs !== undefined && !this.stopped)
          this.retries.set(
            id,
            setTimeout(() => {
              this.retries.delete(id);
              this.fire(id);
            }, retryInMs),
          );
      });
    this.firing.set(id, firing);
  }
}

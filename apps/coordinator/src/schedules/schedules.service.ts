import {
  type CreateScheduleRequest,
  isTerminalStatus,
  type ListSchedulesQuery,
  type RunStatus,
  ScheduleDeclaredInCodeError,
  ScheduleNotFoundError,
  type SchedulePage,
  type ScheduleView,
  type TriggeredSchedule,
  ScheduleTimes,
} from '@nest-durable/common';
import { type NewRun, RunControlRepository } from '@app/run-store';
import {
  advanceSchedule,
  Database,
  databaseNow,
  deleteSchedule,
  findSchedule,
  hostedOnline,
  insertSchedule,
  isScheduleDue,
  listSchedules,
  lockDueSchedule,
  lockSchedule,
  type NewSchedule,
  previousRunStatus,
  type RunEntity,
  runStartedWithKey,
  type ScheduleRow,
  setSchedulePaused,
  type SqlExecutor,
  uuidv7,
} from '@app/persistence';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { COORDINATOR_CONFIG, type CoordinatorConfig } from '../config/coordinator.config';
import { RunLifecycle } from '../hand-off/run-lifecycle.service';
import { CoordinatorMetrics } from '../metrics/coordinator.metrics';
import { InputSchemas } from '../workflows/input-schemas.service';
import { toRunView } from '../runs/run-view';
import { type FiringPlan, planFiring } from './schedule-times';

/** What a firing found: it fired, the schedule was not due (fired elsewhere, paused, deleted), or another coordinator holds it now. */
export type FiringOutcome = 'fired' | 'not_due' | 'busy';

/**
 * Schedules: the client API over them, and their firing. A firing locks the schedule's row, starts its
 * runs and advances its next fire time in one transaction; each run's idempotency key is the schedule
 * id and the fire time, so no fire time starts two runs, whichever coordinator fires it, however often.
 */
@Injectable()
export class SchedulesService {
  private readonly logger = new Logger(SchedulesService.name);

  constructor(
    private readonly db: Database,
    private readonly control: RunControlRepository,
    private readonly metrics: CoordinatorMetrics,
    private readonly lifecycle: RunLifecycle,
    private readonly inputSchemas: InputSchemas,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  /**
   * Checks the input against the version's registered schema and the timing (400 with its reason, nothing stored),
   * then stores the schedule with its first fire time after now.
   */
  async create(request: CreateScheduleRequest): Promise<ScheduleView> {
    await this.inputSchemas.check([request]);
    const now = await databaseNow(this.db);
    const times = ScheduleTimes.parse(request, now);
    const row = await insertSchedule(this.db, {
      ...scheduleFields(request),
      id: uuidv7(),
      workflow: request.workflow,
      version: request.version,
      name: null,
      paused: request.paused,
      nextRunAt: request.paused ? null : new Date(times.next(now)),
    });
    this.logger.log('schedule created', { scheduleId: row.id, workflow: row.workflow, version: row.version });
    return toScheduleView(row);
  }

  async get(id: string): Promise<ScheduleView> {
    const row = await findSchedule(this.db, id);
    if (!row) throw new ScheduleNotFoundError(id);
    return toScheduleView(row);
  }

  async list(query: ListSchedulesQuery): Promise<SchedulePage> {
    const rows = await listSchedules(this.db, query.limit + 1, query.workflow, query.cursor);
    const page = rows.slice(0, query.limit);
    return { schedules: page.map(toScheduleView), nextCursor: rows.length > query.limit ? page[page.length - 1].id : null };
  }

  /**
   * Deletes a schedule. One declared in code is deleted by removing it from the code while workers host
   * its version (their next registration would bring it back: 409); once none online does (an old
   * version retired), it can be deleted here.
   */
  async delete(id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const row = await this.locked(tx, id);
      if (row.name !== null && (await hostedOnline(tx, row.workflow, row.version))) {
        throw new ScheduleDeclaredInCodeError(id, `${row.workflow} ${row.version} ${row.name}`);
      }
      await deleteSchedule(tx, id);
    });
  }

  async pause(id: string): Promise<ScheduleView> {
    return this.db.transaction(async (tx) => {
      const row = await this.locked(tx, id);
      return toScheduleView(row.paused ? row : await setSchedulePaused(tx, id, null));
    });
  }

  /** Fires again from its next fire time after now: times that passed while it was paused are not caught up. */
  async resume(id: string): Promise<ScheduleView> {
    return this.db.transaction(async (tx) => {
      const row = await this.locked(tx, id);
      if (!row.paused) return toScheduleView(row);
      const now = await databaseNow(tx);
      return toScheduleView(await setSchedulePaused(tx, id, new Date(timesOf(row).next(now))));
    });
  }

  /**
   * Starts a run now, paused or not and whatever the overlap policy (it is asked for explicitly); the
   * fire times stay as they are, and the next firing judges overlap by this run.
   */
  async trigger(id: string): Promise<TriggeredSchedule> {
    const { row, run } = await this.db.transaction(async (tx) => {
      const schedule = await this.locked(tx, id);
      const started = await this.startRun(tx, schedule, `schedule:${id}:trigger:${uuidv7()}`);
      return { row: await advanceSchedule(tx, id, schedule.nextRunAt, null, started.id), run: started.run };
    });
    this.lifecycle.startedInTransaction(row.workflow, 1);
    return { schedule: toScheduleView(row), run: toRunView(run!) };
  }

  /**
   * Fires the schedule if its fire time has come: acts on the fire times due (per catchUp), each
   * judged against the schedule's previous run (per overlap), and moves the next fire time on, in
   * one transaction. Run again by whoever holds a timer for it: only the first to lock it fires.
   */
  async fire(id: string): Promise<FiringOutcome> {
    const fired = await this.db.transaction(async (tx) => {
      const schedule = await lockDueSchedule(tx, id);
      if (!schedule) return undefined;
      const plan = planFiring(timesOf(schedule), schedule.nextRunAt!.getTime(), schedule.now, schedule.catchUp, this.config.scheduleMisfireGraceMs);
      let previous = schedule.lastRunId;
      let started = 0;
      let overlapped = 0;
      for (const at of plan.fireTimes) {
        if (previous && schedule.overlap !== 'allow') {
          const status = await previousRunStatus(tx, previous);
          if (status && !isTerminalStatus(status as RunStatus)) {
            if (schedule.overlap === 'skip') {
              overlapped++;
              continue;
            }
            // As POST /v1/runs/:id/cancel does it, in this transaction: the run and its unfinished children.
            await this.control.cancel(previous, tx);
            this.lifecycle.cancelled();
          }
        }
        const run = await this.startRun(tx, schedule, fireKey(id, at));
        if (run.run) started++;
        previous = run.id;
      }
      const lastFiredAt = plan.fireTimes.length > 0 ? new Date(plan.fireTimes[plan.fireTimes.length - 1]) : null;
      await advanceSchedule(tx, id, new Date(plan.nextRunAt), lastFiredAt, previous);
      return { schedule, started, overlapped, plan };
    });
    if (fired) {
      this.recordFiring(fired.schedule, fired.plan, fired.started, fired.overlapped);
      return 'fired';
    }
    // Not locked: either not due (fired already, paused, deleted) or another coordinator's firing holds it.
    return (await isScheduleDue(this.db, id)) ? 'busy' : 'not_due';
  }

  /** The metrics and logs of a firing that committed. */
  private recordFiring(schedule: ScheduleRow & { now: number }, plan: FiringPlan, started: number, overlapped: number): void {
    if (started > 0) this.lifecycle.startedInTransaction(schedule.workflow, started);
    for (const at of plan.fireTimes) this.metrics.scheduleFireLateness.observe(Math.max(0, schedule.now - at) / 1000);
    if (overlapped > 0) this.metrics.scheduleOverlapsSkipped.inc(overlapped);
    const firstActedOn = plan.fireTimes[0] ?? plan.nextRunAt;
    if (firstActedOn > schedule.nextRunAt!.getTime()) {
      this.logger.log('schedule skipped fire times missed while no coordinator fired it', {
        scheduleId: schedule.id,
        catchUp: schedule.catchUp,
        from: schedule.nextRunAt!.toISOString(),
        before: new Date(firstActedOn).toISOString(),
      });
    }
    this.logger.debug('schedule fired', { scheduleId: schedule.id, fireTimes: plan.fireTimes.length, runsStarted: started });
  }

  /** Starts the schedule's run with this key; a key that started one already gives that one (`run` undefined). */
  private async startRun(tx: SqlExecutor, schedule: ScheduleRow, idempotencyKey: string): Promise<{ id: string; run?: RunEntity }> {
    const run: NewRun = {
      id: uuidv7(),
      workflow: schedule.workflow,
      version: schedule.version,
      shard: schedule.shard,
      input: schedule.input,
      priority: schedule.priority,
      idempotencyKey,
      runAt: null,
      // Finds a schedule's runs: GET /v1/runs?tag=schedule:<id>.
      tags: { schedule: schedule.id },
      parentId: null,
      // A firing has no caller whose trace it could join.
      traceparent: null,
      tracestate: null,
    };
    const inserted = (await this.control.start([run], tx)).get(run.id);
    return inserted ? { id: inserted.id, run: inserted } : { id: (await runStartedWithKey(tx, schedule.workflow, idempotencyKey))! };
  }

  private async locked(tx: SqlExecutor, id: string): Promise<ScheduleRow> {
    const row = await lockSchedule(tx, id);
    if (!row) throw new ScheduleNotFoundError(id);
    return row;
  }
}

/** The fire times of a stored schedule (its timing was checked when it was stored). */
function timesOf(row: ScheduleRow): ScheduleTimes {
  return ScheduleTimes.parse({ cron: row.cron, intervalMs: row.intervalMs, timezone: row.cron === null ? null : row.timezone });
}

/** The idempotency key of the run for fire time `at` of schedule `id`. */
export function fireKey(id: string, at: number): string {
  return `schedule:${id}:${new Date(at).toISOString()}`;
}

/** The stored fields of a schedule's timing and runs, from a request or a declaration (defaults filled in). */
export function scheduleFields(
  spec: Omit<CreateScheduleRequest, 'workflow' | 'version'>,
): Omit<NewSchedule, 'id' | 'workflow' | 'version' | 'name' | 'paused' | 'nextRunAt'> {
  return {
    cron: spec.cron ?? null,
    intervalMs: spec.intervalMs ?? null,
    timezone: spec.timezone ?? 'UTC',
    input: spec.input,
    shard: spec.shard ?? null,
    priority: spec.priority,
    overlap: spec.overlap,
    catchUp: spec.catchUp,
  };
}

export function toScheduleView(row: ScheduleRow): ScheduleView {
  return {
    id: row.id,
    workflow: row.workflow,
    version: row.version,
    name: row.name,
    cron: row.cron,
    intervalMs: row.intervalMs,
    timezone: row.timezone,
    input: row.input as ScheduleView['input'],
    shard: row.shard,
    priority: row.priority,
    overlap: row.overlap,
    catchUp: row.catchUp,
    paused: row.paused,
    nextRunAt: row.nextRunAt?.toISOString() ?? null,
    lastFiredAt: row.lastFiredAt?.toISOString() ?? null,
    lastRunId: row.lastRunId,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

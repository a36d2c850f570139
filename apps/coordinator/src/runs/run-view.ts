import { ATTEMPT_TIMES_MAX, type AttemptTime, type JsonValue, type RunView, type TaskView } from '@nest-durable/common';
import type { DatedAttempt, RunEntity, TaskEntity } from '@app/persistence';

/** `paused`: the run's version or shard is paused (it is shown so only while it waits). */
export function toRunView(run: RunEntity, tasks?: TaskEntity[], paused = false): RunView {
  const view: RunView = {
    id: run.id,
    workflow: run.workflow,
    version: run.version,
    status: run.status,
    revision: run.revision,
    attempt: run.attempt,
    priority: run.priority,
    stalls: run.stalls,
    input: run.input as JsonValue,
    output: run.output as JsonValue,
    error: run.error,
    idempotencyKey: run.idempotencyKey,
    shard: run.shard,
    concurrencyKey: run.concurrencyKey,
    paused: paused && (run.status === 'queued' || run.status === 'waiting'),
    parentId: run.parentId,
    buildId: run.buildId,
    tags: run.tags,
    runAt: isoOrNull(run.dueAt),
    createdAt: run.createdAt.toISOString(),
    updatedAt: run.updatedAt.toISOString(),
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    // A run a start returns has reported none yet (those statements leave the columns out).
    progress: (run.progress ?? null) as JsonValue,
    progressAt: run.progressAt?.toISOString() ?? null,
  };
  if (tasks) view.tasks = withAttempts(tasks.map(toTaskView), tasks);
  // The trace id of its traceparent (00-<trace id>-<span id>-<flags>).
  if (run.traceparent) view.traceId = run.traceparent.slice(3, 35);
  return view;
}

/**
 * A task's attempts on one axis: those of the executions that ended in its retry wait (kept with the wait, already
 * dated), then those of the execution that recorded it; while the task has no result yet, its retry wait shows
 * the attempts so far.
 */
function withAttempts(views: TaskView[], tasks: TaskEntity[]): TaskView[] {
  const recorded = new Set(tasks.filter((task) => task.kind === 'task').map((task) => task.key));
  const waited = new Map<string, DatedAttempt[]>();
  for (const task of tasks)
    if (task.kind === 'retry' && task.attemptTimes) waited.set(task.key.slice(RETRY_PREFIX.length), task.attemptTimes as DatedAttempt[]);
  return views.map((view, index) => {
    const task = tasks[index];
    if (task.kind === 'retry') {
      const earlier = !recorded.has(task.key.slice(RETRY_PREFIX.length)) && waited.get(task.key.slice(RETRY_PREFIX.length));
      return earlier ? { ...view, attemptTimes: earlier.map(dated) } : view;
    }
    const earlier = task.kind === 'task' ? waited.get(task.key) : undefined;
    if (!earlier) return view;
    // The last execution's attempts; one attempt is the task's own start to its record.
    const last =
      view.attemptTimes ??
      (task.startedAt
        ? [{ attempt: task.attempts, startedAt: task.startedAt.toISOString(), durationMs: task.createdAt.getTime() - task.startedAt.getTime() }]
        : []);
    return { ...view, attemptTimes: [...earlier.map(dated), ...last].slice(-ATTEMPT_TIMES_MAX) };
  });
}

const RETRY_PREFIX = 'retry:';

const dated = (attempt: DatedAttempt) => ({ attempt: attempt.attempt, startedAt: new Date(attempt.startedAt).toISOString(), durationMs: attempt.durationMs });

function toTaskView(task: TaskEntity): TaskView {
  return {
    key: task.key,
    kind: task.kind,
    seq: task.seq,
    name: task.name,
    status: task.status,
    attempts: task.attempts,
    output: task.output as JsonValue,
    error: task.error,
    createdAt: task.createdAt.toISOString(),
    // A task's row is written when it ends (its start from the duration its worker reported); a suspension
    // step's when the run suspends there, and its finished_at when it resolves (a step resolved at once is
    // written resolved: it ended as it began).
    startedAt: (task.kind === 'task' ? task.startedAt : task.createdAt)?.toISOString() ?? null,
    finishedAt: task.status === 'waiting' ? null : (task.finishedAt ?? task.createdAt).toISOString(),
    wakeAt: task.wakeAt ? isoOrNull(task.wakeAt) : null,
    childId: task.childId,
    ...(task.kind === 'task' &&
      task.attemptTimes &&
      task.startedAt && { attemptTimes: attemptViews(task.attemptTimes as AttemptTime[], task.startedAt, task.attempts) }),
  };
}

/**
 * A task's attempts on the coordinator's clock: each one's offset from the start of the execution (which the
 * coordinator dated, see startedAt) added to that start. The last attempt is the one `attempts` counts.
 */
function attemptViews(times: AttemptTime[], startedAt: Date, attempts: number): NonNullable<TaskView['attemptTimes']> {
  const first = attempts - times.length + 1;
  return times.map((time, index) => ({
    attempt: first + index,
    startedAt: new Date(startedAt.getTime() + time.offsetMs).toISOString(),
    durationMs: time.durationMs,
  }));
}

/** 'infinity' (a run waiting for an event or a child) comes back from node-postgres as the number Infinity. */
function isoOrNull(date: Date | number): string | null {
  return date instanceof Date ? date.toISOString() : null;
}

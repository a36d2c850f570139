import type { JsonValue, RunView, TaskView } from '@nest-durable/common';
import type { RunEntity, TaskEntity } from '@app/persistence';

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
  };
  if (tasks) view.tasks = tasks.map(toTaskView);
  // The trace id of its traceparent (00-<trace id>-<span id>-<flags>).
  if (run.traceparent) view.traceId = run.traceparent.slice(3, 35);
  return view;
}

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
  };
}

/** 'infinity' (a run waiting for an event or a child) comes back from node-postgres as the number Infinity. */
function isoOrNull(date: Date | number): string | null {
  return date instanceof Date ? date.toISOString() : null;
}

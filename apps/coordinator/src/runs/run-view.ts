import type { JsonValue, RunView, TaskView } from '@app/contracts';
import type { RunEntity, TaskEntity } from '@app/persistence';

/** Columns of `runs` aliased to RunEntity's property names, for plain SQL that returns runs. */
export const RUN_COLUMNS = `id, workflow, version, queue, status, revision, attempt, priority, input, output, error,
  idempotency_key AS "idempotencyKey", due_at AS "dueAt", claimed_by AS "claimedBy", heartbeat_at AS "heartbeatAt",
  created_at AS "createdAt", updated_at AS "updatedAt", started_at AS "startedAt", finished_at AS "finishedAt"`;

export function toRunView(run: RunEntity, tasks?: TaskEntity[]): RunView {
  const view: RunView = {
    id: run.id,
    workflow: run.workflow,
    version: run.version,
    status: run.status,
    revision: run.revision,
    attempt: run.attempt,
    priority: run.priority,
    input: run.input as JsonValue,
    output: run.output as JsonValue,
    error: run.error,
    idempotencyKey: run.idempotencyKey,
    runAt: run.dueAt.toISOString(),
    createdAt: run.createdAt.toISOString(),
    updatedAt: run.updatedAt.toISOString(),
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
  };
  if (tasks) view.tasks = tasks.map(toTaskView);
  return view;
}

function toTaskView(task: TaskEntity): TaskView {
  return {
    key: task.key,
    name: task.name,
    status: task.status,
    attempts: task.attempts,
    output: task.output as JsonValue,
    error: task.error,
    createdAt: task.createdAt.toISOString(),
  };
}

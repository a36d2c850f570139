export const RUN_STATUSES = ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'] as const;
/**
 * queued: ready (or due at `runAt`); running: claimed by a worker; waiting: suspended (durable sleep,
 * event, child run, retry backoff) until it is due again; the last three are terminal.
 */
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A run in one of these states never changes again. */
export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

export function isTerminalStatus(status: RunStatus): boolean {
  return TERMINAL_RUN_STATUSES.includes(status);
}

/** The tag a rerun carries: the id of the run it reran (`GET /v1/runs?tag=rerun-of:<id>` lists a run's reruns). */
export const RERUN_OF_TAG = 'rerun-of';

export const TASK_STATUSES = ['completed', 'failed'] as const;
/** How a task ended, as the worker reports it. */
export type TaskOutcome = (typeof TASK_STATUSES)[number];
/** A recorded step: a task outcome, or `waiting` while a suspension step has not resolved. */
export type TaskStatus = TaskOutcome | 'waiting';

/**
 * What a recorded step is: a task, a point where the run suspended, a patch marker (where the run first reached
 * a `ctx.patched` change, recorded so that its replays take the same branch), a completion token (`token`: made by
 * `ctx.awaitExternal`; `external`: the wait on it), an update the run applied where it waited (its input and
 * answer, at the position of that wait, so that its replays apply it there again), or a wait group's outcome
 * (`ctx.any`, `ctx.all`: which branch won; its branches are steps of their own kinds at the group's position).
 */
export const STEP_KINDS = ['task', 'sleep', 'event', 'child', 'retry', 'patch', 'token', 'external', 'update', 'group'] as const;
export type StepKind = (typeof STEP_KINDS)[number];

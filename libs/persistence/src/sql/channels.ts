/**
 * The NOTIFY channels the schema's statements and triggers notify (their names are written out in the statements
 * of this folder and in the migrations; the statement specs listen on these constants). Payloads are small
 * identifiers only, never documents (NOTIFY caps them at 8000 bytes), but a run's progress, bounded to fit.
 */

/** A run became ready to claim; payload: its queue name. */
export const RUNS_READY_CHANNEL = 'wf_runs_ready';

/**
 * A run got a future due time (see the due-timers migration); payload: `<due, epoch ms> <run id>
 * <queue>`. The coordinators' due timers keep these and act at that moment.
 */
export const RUNS_DUE_CHANNEL = 'wf_runs_due';

/** A run reached a terminal state; payload: its id. */
export const RUN_FINISHED_CHANNEL = 'wf_run_finished';

/**
 * Runs changed state (see the dashboard-feed migration): one notification per statement that appended to the
 * run history; payload: a JSON array of `[id, workflow, version, status, revision, epoch ms]`.
 */
export const RUN_CHANGES_CHANNEL = 'wf_run_changes';

/**
 * A run reported progress (see run-values.sql.ts): one notification per run, only while a feed is open; payload:
 * `[id, workflow, version, progress, epoch ms]` (progress is at most PROGRESS_MAX_BYTES of JSON).
 */
export const RUN_PROGRESS_CHANNEL = 'wf_run_progress';

/**
 * The NOTIFY channels the schema's statements and triggers notify (their names are written out in the statements
 * of this folder and in the migrations; the statement specs listen on these constants). Payloads are small
 * identifiers only, never documents (NOTIFY caps them at 8000 bytes).
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

/** NOTIFY channels. Payloads are small identifiers only, never documents (NOTIFY caps them at 8000 bytes). */

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

export const NOTIFICATION_LISTENER_OPTIONS = Symbol('NOTIFICATION_LISTENER_OPTIONS');

export interface NotificationListenerOptions {
  /** Connection string of the database to LISTEN on. */
  url: string;
  /** application_name of the LISTEN session. */
  applicationName: string;
  channels: string[];
  /** How often the LISTEN session is probed with a round trip to catch a half-open socket. */
  probeIntervalMs: number;
}

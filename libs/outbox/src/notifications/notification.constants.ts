// The channels are named where the statements that notify them live (the SQL home).
export { RUN_CHANGES_CHANNEL, RUN_FINISHED_CHANNEL, RUN_PROGRESS_CHANNEL, RUNS_DUE_CHANNEL, RUNS_READY_CHANNEL } from '@app/persistence';

export const NOTIFICATION_LISTENER_OPTIONS = Symbol('NOTIFICATION_LISTENER_OPTIONS');

/** The session LISTENs on the database of the (global) PersistenceModule, on its primary (PrimaryLocator). */
export interface NotificationListenerOptions {
  /** application_name of the LISTEN session. */
  applicationName: string;
  channels: string[];
  /** How often the LISTEN session is probed with a round trip to catch a half-open socket. */
  probeIntervalMs: number;
}

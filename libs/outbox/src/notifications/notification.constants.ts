// The channels are named where the statements that notify them live (the SQL home).
export { RUN_CHANGES_CHANNEL, RUN_FINISHED_CHANNEL, RUNS_DUE_CHANNEL, RUNS_READY_CHANNEL } from '@app/persistence';

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

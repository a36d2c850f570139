import type { JsonValue } from '@app/contracts';

/**
 * What a publisher delivers for a run that became ready: enough to start it without another read
 * (the worker still takes the run at the coordinator with `revision`, which also returns its steps).
 * Written by the database (outbox_message()).
 */
export interface DispatchMessage {
  runId: string;
  workflow: string;
  version: string;
  queue: string;
  /** The revision the run had when it became ready; a take with an older one is refused. */
  revision: number;
  attempt: number;
  priority: number;
  /** Epoch milliseconds. */
  dueAt: number;
  input: JsonValue;
  /** False when the input was too large to carry: the take returns it. */
  inputIncluded: boolean;
}

export const DISPATCH_MODES = ['none', 'redis-zset', 'redis-streams'] as const;
export type DispatchMode = (typeof DISPATCH_MODES)[number];

/**
 * A wake-up for one queue, published when a run of it became ready (the outbox row `id` written for
 * run `runId`). Wake-ups are interchangeable within their queue: a worker holding some asks the
 * coordinator for that many runs of the queue, and PostgreSQL picks which (priority, work stealing,
 * limits), exactly as for a claim. `runId` says why it was sent (logs, dead letters).
 */
export interface DispatchMessage {
  id: string;
  runId: string;
  queue: string;
}

export const DISPATCH_MODES = ['none', 'redis-zset', 'redis-streams'] as const;
export type DispatchMode = (typeof DISPATCH_MODES)[number];

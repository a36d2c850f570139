import type { RunStatus, TaskView } from '@nest-durable/client';

/**
 * Shapes of the endpoints the dashboard-api work adds (GET /v1/stats, /v1/runs/{id}/transitions, /v1/workers,
 * the /v1/feed events, the run view's step times), as agreed with it, until the contract exports them.
 */
export interface StatsView {
  window: string;
  generatedAt: string;
  runs: { workflow: string; version: string; status: RunStatus; count: number }[];
  throughput: { minute: string; started: number; finished: number }[];
  queues: {
    queue: string;
    workflow: string;
    version: string;
    shard: string | null;
    ready: number;
    delayed: number;
    running: number;
    waiting: number;
    oldestReadyAgeMs: number | null;
    hosted: boolean;
  }[];
  outbox: { backlog: number; oldestAgeMs: number | null };
  deadLetters: number;
  workersOnline: number;
}

export interface TransitionView {
  from: string | null;
  to: string;
  revision: number;
  workerId: string | null;
  at: string;
}
export interface TransitionPage {
  items: TransitionView[];
}

/** One `event: run` of the live feed. */
export interface RunChange {
  id: string;
  workflow: string;
  version: string;
  status: RunStatus;
  revision: number;
  at: string;
}

/** A step as the run view gives it, with the times the dashboard-api work adds. */
export type StepView = TaskView & { startedAt?: string | null; finishedAt?: string | null; wakeAt?: string | null; childId?: string | null };

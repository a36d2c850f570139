import type { WorkflowDefinition } from '@nest-durable/workflow';

export const WORKER_OPTIONS = Symbol('WORKER_OPTIONS');

export interface WorkflowWorkerOptions {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  workflows: WorkflowDefinition<any, any>[];
  /**
   * Coordinator base URL, e.g. http://127.0.0.1:3000, or the URLs of several coordinators of one
   * deployment: requests spread over those answering (see CoordinatorPool).
   */
  coordinatorUrl: string | string[];
  /** Stable name of this worker process; recorded on the runs it claims. Default: host-pid. */
  workerId?: string;
  /** Routing shards served (a run started with `shard` goes only to workers serving it). Default: runs without a shard. */
  shards?: string[];
  /** Runs executed at once. Default 10. */
  concurrency?: number;
  /** How often claims of running runs are refreshed. Default 30 s; must stay below the coordinator's idle time. */
  heartbeatIntervalMs?: number;
  /** How long one claim request waits at the coordinator for work. Default 20 s. */
  claimWaitMs?: number;
  /** On shutdown, how long running runs may take to finish before they are abandoned. Default 10 s. */
  shutdownGraceMs?: number;
  /** Task retry waits up to this long happen in process; longer ones suspend the run. Default 5 s. */
  inProcessRetryMaxMs?: number;
  /** Extra headers on every request to the coordinator. */
  headers?: Record<string, string>;
}

export type ResolvedWorkerOptions = Required<WorkflowWorkerOptions>;

import { isHttpUrl } from '@nest-durable/client';
import { parseBuildId, REGISTRATION_INTERVAL_MAX_MS } from '@nest-durable/common';
import type { WorkflowDefinition } from '@nest-durable/workflow';
import { LEASE_DEFAULTS } from '@app/locking';
import { hostname } from 'node:os';
import { defaultBuildId } from './build-id';
import { WorkerSetupError } from './worker-setup.error';

/** Injection token of the worker's options with every default filled in (ResolvedWorkerOptions). */
export const WORKER_OPTIONS = Symbol('WORKER_OPTIONS');

export interface WorkflowWorkerOptions {
  /**
   * Workflows defined with `defineWorkflow`, hosted beside the `@Workflow` classes the app provides (found in any
   * of its modules). Default: none.
   */
  // biome-ignore lint/suspicious/noExplicitAny: workflows of any input and output types are registered side by side
  workflows?: WorkflowDefinition<any, any>[];
  /**
   * Coordinator base URL, e.g. http://127.0.0.1:3000, or the URLs of several coordinators of one
   * deployment: requests spread over those answering (see CoordinatorPool).
   */
  coordinatorUrl: string | string[];
  /** Stable name of this worker process; recorded on the runs it claims. Default: host-pid. */
  workerId?: string;
  /**
   * Which build of the code this worker runs (a version, a commit, an image tag): recorded on each run it executes
   * (`buildId` of GET /v1/runs/:id: the build that ran it last) and shown by GET /v1/workers. 1-128 letters, digits,
   * '.', '_', '+' or '-', starting with a letter or digit. Default: the version in the app's package.json (the
   * nearest one above its entry script), else this package's version.
   */
  buildId?: string;
  /** Routing shards served (a run started with `shard` goes only to workers serving it). Default: runs without a shard. */
  shards?: string[];
  /** Handlers executing at once (a run reporting its outcome holds no slot: see WorkerRuntime). Default 10. */
  concurrency?: number;
  /** How often claims of running runs are refreshed. Default 30 s; must stay below the coordinator's idle time. */
  heartbeatIntervalMs?: number;
  /** How often the worker registers with the coordinators (the worker registry, GET /v1/workers). Default 5 s. */
  registrationIntervalMs?: number;
  /** How long one claim request waits at the coordinator for work. Default 20 s. */
  claimWaitMs?: number;
  /** On shutdown, how long running runs may take to finish before they are abandoned. Default 10 s. */
  shutdownGraceMs?: number;
  /** Task retry waits up to this long happen in process; longer ones suspend the run. Default 5 s. */
  inProcessRetryMaxMs?: number;
  /**
   * The least time between two recordings of a run's progress (`ctx.progress`): the last value reported within it
   * is the one recorded and streamed. 100 ms to 60 s; default 500 ms.
   */
  progressIntervalMs?: number;
  /** Extra headers on every request to the coordinator. */
  headers?: Record<string, string>;
}

export type ResolvedWorkerOptions = Required<WorkflowWorkerOptions>;

/** The defaults of the worker's settings (the worker app's environment reads the same). */
export const WORKER_DEFAULTS = {
  concurrency: 10,
  heartbeatIntervalMs: LEASE_DEFAULTS.heartbeatIntervalMs,
  claimWaitMs: 20_000,
  registrationIntervalMs: 5_000,
  shutdownGraceMs: 10_000,
  inProcessRetryMaxMs: 5_000,
  progressIntervalMs: 500,
} as const;

/** Fills in the defaults and refuses what cannot work, once, when the worker starts. */
export function resolveWorkerOptions(options: WorkflowWorkerOptions): ResolvedWorkerOptions {
  const resolved: ResolvedWorkerOptions = {
    workerId: `${hostname()}-${process.pid}`,
    ...WORKER_DEFAULTS,
    shards: [] as string[],
    headers: {},
    workflows: [] as WorkflowWorkerOptions['workflows'],
    ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)),
  } as ResolvedWorkerOptions;
  resolved.buildId ??= defaultBuildId(process.argv[1]);
  try {
    parseBuildId(resolved.buildId);
  } catch (error) {
    throw new WorkerSetupError(`${(error as Error).message}, got ${JSON.stringify(resolved.buildId)}`);
  }
  const urls: unknown = typeof resolved.coordinatorUrl === 'string' ? [resolved.coordinatorUrl] : resolved.coordinatorUrl;
  if (!Array.isArray(urls) || urls.length === 0 || !urls.every(isHttpUrl)) {
    throw new WorkerSetupError(`coordinatorUrl must be an http(s) URL or a non-empty list of them, got ${JSON.stringify(resolved.coordinatorUrl)}`);
  }
  if (!Number.isInteger(resolved.concurrency) || resolved.concurrency < 1) {
    throw new WorkerSetupError(`concurrency must be a positive integer, got ${resolved.concurrency}`);
  }
  if (
    !Number.isInteger(resolved.registrationIntervalMs) ||
    resolved.registrationIntervalMs < 100 ||
    resolved.registrationIntervalMs > REGISTRATION_INTERVAL_MAX_MS
  ) {
    throw new WorkerSetupError(`registrationIntervalMs must be an integer from 100 to ${REGISTRATION_INTERVAL_MAX_MS}, got ${resolved.registrationIntervalMs}`);
  }
  if (!Number.isInteger(resolved.progressIntervalMs) || resolved.progressIntervalMs < 100 || resolved.progressIntervalMs > 60_000) {
    throw new WorkerSetupError(`progressIntervalMs must be an integer from 100 to 60000, got ${resolved.progressIntervalMs}`);
  }
  return resolved;
}

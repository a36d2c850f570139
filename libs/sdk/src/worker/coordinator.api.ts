import type {
  ClaimedRun,
  ClaimResponse,
  CompleteRunRequest,
  FailRunRequest,
  HeartbeatResponse,
  StartChildRequest,
  StepResponse,
  StoredTask,
  SuspendRequest,
  TakeRunsResponse,
  TaskResultRequest,
  TaskResultResponse,
  WorkflowRef,
} from '@app/contracts';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { isTransient, JsonHttpClient } from '../http/json-http.client';
import { WORKER_OPTIONS, type ResolvedWorkerOptions } from './worker.constants';

const REPORT_ATTEMPTS = 6;
const REPORT_FIRST_DELAY_MS = 100;

/** The worker side of the worker protocol (see WorkerApiController in the coordinator). */
@Injectable()
export class CoordinatorApi {
  private readonly logger = new Logger(CoordinatorApi.name);
  private readonly http: JsonHttpClient;

  constructor(@Inject(WORKER_OPTIONS) private readonly options: ResolvedWorkerOptions) {
    this.http = new JsonHttpClient(options.coordinatorUrl, options.headers);
  }

  async claim(workflows: WorkflowRef[], limit: number, waitMs: number, signal?: AbortSignal): Promise<ClaimedRun[]> {
    const response = await this.http.request<ClaimResponse>(
      'POST',
      '/v1/worker/claims',
      { workerId: this.options.workerId, workflows, limit, waitMs },
      signal,
    );
    return response.runs;
  }

  /** Resolves when the coordinator answers its liveness check. */
  async ping(): Promise<void> {
    await this.http.request('GET', '/health/live', undefined, AbortSignal.timeout(2_000));
  }

  /** Takes runs a transport delivered, at their messages' revisions. */
  take(runs: { id: string; revision: number }[]): Promise<TakeRunsResponse> {
    if (runs.length === 0) return Promise.resolve({ runs: [], stale: [] });
    return this.http.request<TakeRunsResponse>('POST', '/v1/worker/takes', { workerId: this.options.workerId, runs });
  }

  async heartbeat(runs: { id: string; expectedRevision: number }[]): Promise<string[]> {
    const response = await this.http.request<HeartbeatResponse>('POST', '/v1/worker/heartbeats', {
      workerId: this.options.workerId,
      runs,
    });
    return response.lost;
  }

  async recordTask(runId: string, task: TaskResultRequest): Promise<StoredTask> {
    const response = await this.report<TaskResultResponse>(`/v1/worker/runs/${runId}/tasks`, task);
    return response.task;
  }

  async complete(runId: string, request: CompleteRunRequest): Promise<void> {
    await this.report(`/v1/worker/runs/${runId}/complete`, request);
  }

  /** Fails the run; with `retryDelayMs`, schedules its next attempt instead. */
  async fail(runId: string, request: FailRunRequest): Promise<void> {
    await this.report(`/v1/worker/runs/${runId}/fail`, request);
  }

  suspend(runId: string, request: SuspendRequest): Promise<StepResponse> {
    return this.report<StepResponse>(`/v1/worker/runs/${runId}/suspend`, request);
  }

  startChild(runId: string, request: StartChildRequest): Promise<StepResponse> {
    return this.report<StepResponse>(`/v1/worker/runs/${runId}/children`, request);
  }

  async release(runId: string, expectedRevision: number): Promise<void> {
    await this.http.request('POST', `/v1/worker/runs/${runId}/release`, { expectedRevision });
  }

  /**
   * Sends a revision-checked write, retrying while the coordinator is unreachable or failing.
   * Retrying is safe: a write that did land makes its retry a 409 (revision moved on) or a replay
   * of the same task key (first result wins).
   */
  private async report<T>(path: string, body: unknown): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.http.request<T>('POST', path, body);
      } catch (error) {
        if (!isTransient(error) || attempt >= REPORT_ATTEMPTS) throw error;
        const delayMs = REPORT_FIRST_DELAY_MS * 2 ** (attempt - 1);
        this.logger.warn(`${path} failed (${(error as Error).message}); retry ${attempt} in ${delayMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }
}

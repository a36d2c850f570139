import { isTerminalStatus, RunPage, RunStatus, RunView, WAIT_MS_MAX } from './contract';
import { JsonHttpClient } from './json-http.client';

export interface WorkflowClientOptions {
  /** Coordinator base URL, e.g. http://127.0.0.1:3000 */
  url: string;
  /** The coordinator's CLIENT_TOKEN. */
  token?: string;
  headers?: Record<string, string>;
}

export interface StartOptions {
  /** Starting twice with the same key (per workflow) returns the first run. */
  idempotencyKey?: string;
  /** Routing shard: only workers serving it (WORKER_SHARDS) take the run. */
  shard?: string;
  /** Higher runs first among due runs; default 0. */
  priority?: number;
  /** Not before this time. */
  runAt?: Date;
}

export interface TypedRunView<O> extends Omit<RunView, 'output'> {
  output: O | null;
}

type WorkflowRef = { readonly name: string; readonly version: string };

/**
 * A workflow definition as the client sees it (`defineWorkflow` in @nest-durable/workflow returns
 * one): its name and version, and the input and output types its handler declares.
 */
export interface TypedWorkflow<I, O> extends WorkflowRef {
  readonly handler: (ctx: never, input: I) => Promise<O>;
}

type InputOf<W> = W extends TypedWorkflow<infer I, unknown> ? I : never;
type OutputOf<W> = W extends TypedWorkflow<never, infer O> ? O : never;

/** The typed client for users' own services: start, get, list, wait for and cancel runs. */
export class WorkflowClient {
  private readonly http: JsonHttpClient;

  constructor(options: WorkflowClientOptions) {
    this.http = new JsonHttpClient(options.url, {
      ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      ...options.headers,
    });
  }

  start<W extends TypedWorkflow<never, unknown>>(workflow: W, input: InputOf<W>, options?: StartOptions): Promise<TypedRunView<OutputOf<W>>>;
  start(workflow: WorkflowRef, input?: unknown, options?: StartOptions): Promise<RunView>;
  start(workflow: WorkflowRef, input?: unknown, options: StartOptions = {}): Promise<RunView> {
    return this.http.request<RunView>('POST', '/v1/runs', {
      workflow: workflow.name,
      version: workflow.version,
      input,
      idempotencyKey: options.idempotencyKey,
      shard: options.shard,
      priority: options.priority,
      runAt: options.runAt?.toISOString(),
    });
  }

  get(runId: string): Promise<RunView> {
    return this.http.request<RunView>('GET', `/v1/runs/${encodeURIComponent(runId)}`);
  }

  list(query: { workflow?: string; status?: RunStatus; limit?: number; cursor?: string } = {}): Promise<RunPage> {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
    const suffix = params.size > 0 ? `?${params}` : '';
    return this.http.request<RunPage>('GET', `/v1/runs${suffix}`);
  }

  /**
   * Resolves with the run once it is terminal (completed, failed or cancelled), or as it is when
   * `timeoutMs` has passed. Each request long-polls the coordinator, so no time is lost polling.
   */
  async waitForResult(runId: string, options: { timeoutMs?: number } = {}): Promise<RunView> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const waitMs = Math.max(0, Math.min(WAIT_MS_MAX, deadline - Date.now()));
      const run = await this.http.request<RunView>('GET', `/v1/runs/${encodeURIComponent(runId)}/result?waitMs=${waitMs}`);
      if (isTerminalStatus(run.status) || Date.now() >= deadline) return run;
    }
  }

  cancel(runId: string): Promise<RunView> {
    return this.http.request<RunView>('POST', `/v1/runs/${encodeURIComponent(runId)}/cancel`);
  }
}

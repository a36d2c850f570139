import type {
  DashboardConfig,
  DeadLetterPage,
  EventAccepted,
  RedriveResult,
  RunPage,
  RunTransitions,
  RunView,
  SchedulePage,
  Stats,
  ScheduleView,
  TriggeredSchedule,
  WorkerList,
  WorkflowLimits,
  WorkflowList,
  WorkflowView,
} from '@nest-durable/common';
import { DurableError } from '@nest-durable/common/durable-error';

/** The client token for this browser tab (sessionStorage: gone when the tab closes). */
const TOKEN_KEY = 'wf.clientToken';

export const token = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** An error answer of the API: its status, its machine-readable reason and its one line for a human. */
export class ApiError extends DurableError {
  constructor(
    readonly status: number,
    reason: string,
    message: string,
  ) {
    super(reason, message);
  }
}

/** Told when the API refuses the token (401), so the app asks for it again. */
let onUnauthorized: () => void = () => undefined;
export function whenUnauthorized(listener: () => void): void {
  onUnauthorized = listener;
}
/** Says that the coordinator refused the token (an API call's 401, or the live feed's). */
export function tokenRefused(): void {
  onUnauthorized();
}

export function authHeaders(): Record<string, string> {
  const value = token.get();
  return value ? { authorization: `Bearer ${value}` } : {};
}

async function request<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, auth = authHeaders()): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as unknown) : undefined;
  if (!response.ok) {
    const error = (parsed ?? {}) as { reason?: string; message?: string };
    if (response.status === 401) tokenRefused();
    throw new ApiError(response.status, error.reason ?? 'http_error', error.message ?? `${method} ${path} answered ${response.status}`);
  }
  return parsed as T;
}

/** A query string of the set values only. */
function query(values: Record<string, string | number | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values)) if (value !== undefined && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}

const workflow = (name: string, version: string) => `/v1/workflows/${encodeURIComponent(name)}/${encodeURIComponent(version)}`;
const run = (id: string) => `/v1/runs/${encodeURIComponent(id)}`;

export interface RunFilter {
  workflow?: string;
  version?: string;
  status?: string;
  createdAfter?: string;
  createdBefore?: string;
  idempotencyKey?: string;
}

/** The API calls the pages make, one per endpoint of the contract (packages/common/src/contract/endpoints.ts). */
export const api = {
  config: () => request<DashboardConfig>('GET', '/ui/config.json'),
  /** The smallest authenticated read, with a token not kept yet: it answers only if the coordinator accepts it. */
  checkToken: (candidate: string) => request<RunPage>('GET', `/v1/runs${query({ limit: 1 })}`, undefined, { authorization: `Bearer ${candidate}` }),
  stats: (window: '1h' | '24h') => request<Stats>('GET', `/v1/stats${query({ window })}`),
  listRuns: (filter: RunFilter, cursor?: string, limit = 25) => request<RunPage>('GET', `/v1/runs${query({ ...filter, cursor, limit })}`),
  getRun: (id: string) => request<RunView>('GET', run(id)),
  transitions: (id: string) => request<RunTransitions>('GET', `${run(id)}/transitions`),
  cancel: (id: string) => request<RunView>('POST', `${run(id)}/cancel`),
  retry: (id: string) => request<RunView>('POST', `${run(id)}/retry`),
  wake: (id: string) => request<RunView>('POST', `${run(id)}/wake`),
  sendEvent: (id: string, name: string, data: unknown) => request<EventAccepted>('POST', `${run(id)}/events/${encodeURIComponent(name)}`, { data }),
  workers: () => request<WorkerList>('GET', '/v1/workers'),
  schedules: (cursor?: string) => request<SchedulePage>('GET', `/v1/schedules${query({ cursor, limit: 50 })}`),
  pauseSchedule: (id: string) => request<ScheduleView>('POST', `/v1/schedules/${encodeURIComponent(id)}/pause`),
  resumeSchedule: (id: string) => request<ScheduleView>('POST', `/v1/schedules/${encodeURIComponent(id)}/resume`),
  triggerSchedule: (id: string) => request<TriggeredSchedule>('POST', `/v1/schedules/${encodeURIComponent(id)}/trigger`),
  deleteSchedule: (id: string) => request<void>('DELETE', `/v1/schedules/${encodeURIComponent(id)}`),
  workflows: () => request<WorkflowList>('GET', '/v1/workflows'),
  pause: (name: string, version: string) => request<WorkflowView>('POST', `${workflow(name, version)}/pause`),
  resume: (name: string, version: string) => request<WorkflowView>('POST', `${workflow(name, version)}/resume`),
  setLimits: (name: string, version: string, limits: WorkflowLimits) => request<WorkflowView>('PUT', `${workflow(name, version)}/limits`, limits),
  clearLimits: (name: string, version: string) => request<WorkflowView>('DELETE', `${workflow(name, version)}/limits`),
  deadLetters: (cursor?: string) => request<DeadLetterPage>('GET', `/v1/dead-letters${query({ cursor, limit: 50 })}`),
  redrive: (id: string) => request<RedriveResult>('POST', `/v1/dead-letters/${encodeURIComponent(id)}/redrive`),
  deleteDeadLetter: (id: string) => request<void>('DELETE', `/v1/dead-letters/${encodeURIComponent(id)}`),
};

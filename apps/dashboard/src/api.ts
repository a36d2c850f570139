import type { API, EndpointCall, EndpointResult, JsonValue } from '@nest-durable/common';
import { ROUTES, type RouteCall, routeRequest } from '@nest-durable/common/routes';
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

/** The contract's endpoints, for their types only (their schemas stay out of the bundle: the routes come from ROUTES). */
type Api = typeof API;
type EndpointName = keyof Api & keyof typeof ROUTES;

/** Calls the contract's endpoint `name` with what its schemas type: a renamed field or path parameter fails the build. */
async function call<N extends EndpointName>(name: N, input: EndpointCall<Api[N]>, auth = authHeaders()): Promise<EndpointResult<Api[N]>> {
  // Typed by the call's signature; routeRequest only fills the route in.
  const { method, path, body } = routeRequest(ROUTES[name], input as RouteCall);
  const response = await fetch(path, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as EndpointResult<Api[N]>;
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as unknown) : undefined;
  if (!response.ok) {
    const error = (parsed ?? {}) as { reason?: string; message?: string };
    if (response.status === 401) tokenRefused();
    throw new ApiError(response.status, error.reason ?? 'http_error', error.message ?? `${method} ${path} answered ${response.status}`);
  }
  return parsed as EndpointResult<Api[N]>;
}

type ListRunsQuery = NonNullable<EndpointCall<Api['listRuns']>['query']>;

/**
 * The runs page's filters: fields of the list's query, with the text the address gives them (a value the coordinator
 * cannot read, such as an unknown status, is sent as it is: its refusal is what the page shows).
 */
export type RunFilter = Partial<
  Pick<Record<keyof ListRunsQuery, string>, 'workflow' | 'version' | 'status' | 'createdAfter' | 'createdBefore' | 'idempotencyKey'>
> & { /** `key:value` each: runs with every one. */ tag?: string[] };

type BulkFilter = EndpointCall<Api['cancelRuns']>['body']['filter'];

/** The fields of a filter that are set (an empty one filters nothing). */
export function setFields<T extends object>(filter: T): Partial<T> {
  return Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== undefined && value !== '')) as Partial<T>;
}

/** The API calls the pages make, each an endpoint of the contract (packages/common/src/contract/endpoints.ts). */
export const api = {
  config: () => call('dashboardConfig', {}),
  /** The smallest authenticated read, with a token not kept yet: it answers only if the coordinator accepts it. */
  checkToken: (candidate: string) => call('listRuns', { query: { limit: 1 } }, { authorization: `Bearer ${candidate}` }),
  stats: (window: NonNullable<EndpointCall<Api['stats']>['query']>['window']) => call('stats', { query: { window } }),
  listRuns: (filter: RunFilter, cursor?: string, limit = 25) => call('listRuns', { query: { ...(setFields(filter) as ListRunsQuery), cursor, limit } }),
  getRun: (id: string) => call('getRun', { params: { id } }),
  transitions: (id: string) => call('runTransitions', { params: { id } }),
  cancel: (id: string) => call('cancelRun', { params: { id } }),
  retry: (id: string) => call('retryRun', { params: { id } }),
  wake: (id: string) => call('wakeRun', { params: { id } }),
  rerun: (id: string, input: JsonValue) => call('rerunRun', { params: { id }, body: { input } }),
  /** One request of a bulk cancel or retry of the runs `filter` matches (`dryRun`: count them). */
  bulk: (action: 'cancel' | 'retry', filter: RunFilter, options: { dryRun?: boolean; before?: string }) =>
    call(action === 'cancel' ? 'cancelRuns' : 'retryRuns', { body: { filter: setFields(filter) as BulkFilter, ...options } }),
  sendEvent: (id: string, name: string, data: JsonValue) => call('sendEvent', { params: { id, name }, body: { data } }),
  values: (id: string) => call('listRunValues', { params: { id } }),
  query: (id: string, name: string) => call('queryRun', { params: { id, name } }),
  /** Sends an update and waits up to `waitMs` for the run's answer (a pending update comes back when it has none yet). */
  sendUpdate: (id: string, name: string, input: JsonValue, waitMs = 10_000) => call('sendUpdate', { params: { id, name }, body: { input, waitMs } }),
  workers: () => call('listWorkers', {}),
  schedules: (cursor?: string) => call('listSchedules', { query: { cursor, limit: 50 } }),
  pauseSchedule: (id: string) => call('pauseSchedule', { params: { id } }),
  resumeSchedule: (id: string) => call('resumeSchedule', { params: { id } }),
  triggerSchedule: (id: string) => call('triggerSchedule', { params: { id } }),
  deleteSchedule: (id: string) => call('deleteSchedule', { params: { id } }),
  workflows: () => call('listWorkflows', {}),
  pause: (name: string, version: string) => call('pauseWorkflow', { params: { name, version } }),
  resume: (name: string, version: string) => call('resumeWorkflow', { params: { name, version } }),
  setLimits: (name: string, version: string, limits: EndpointCall<Api['setWorkflowLimits']>['body']) =>
    call('setWorkflowLimits', { params: { name, version }, body: limits }),
  clearLimits: (name: string, version: string) => call('clearWorkflowLimits', { params: { name, version } }),
  deadLetters: (cursor?: string) => call('listDeadLetters', { query: { cursor, limit: 50 } }),
  redrive: (id: string) => call('redriveDeadLetter', { params: { id } }),
  deleteDeadLetter: (id: string) => call('deleteDeadLetter', { params: { id } }),
};

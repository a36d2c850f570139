/** A route of the coordinator's HTTP API: its method and its path (OpenAPI style: `/v1/runs/{id}`). */
export interface ApiRoute {
  method: 'get' | 'post' | 'put' | 'delete';
  path: string;
}

/**
 * Every route of the coordinator's HTTP API, by the name of its entry in API (endpoints.ts), which takes its method
 * and path from here and adds the schemas. Plain data, so that a caller with no use for the schemas (the dashboard,
 * whose bundle leaves TypeBox out) builds its requests from the same table.
 */
export const ROUTES = {
  // ---- runs (clients) ----
  startRun: { method: 'post', path: '/v1/runs' },
  startRuns: { method: 'post', path: '/v1/runs/batch' },
  listRuns: { method: 'get', path: '/v1/runs' },
  getRun: { method: 'get', path: '/v1/runs/{id}' },
  runResult: { method: 'get', path: '/v1/runs/{id}/result' },
  cancelRun: { method: 'post', path: '/v1/runs/{id}/cancel' },
  sendEvent: { method: 'post', path: '/v1/runs/{id}/events/{name}' },
  wakeRun: { method: 'post', path: '/v1/runs/{id}/wake' },
  retryRun: { method: 'post', path: '/v1/runs/{id}/retry' },
  runTransitions: { method: 'get', path: '/v1/runs/{id}/transitions' },
  queryRun: { method: 'get', path: '/v1/runs/{id}/queries/{name}' },
  listRunValues: { method: 'get', path: '/v1/runs/{id}/queries' },
  rerunRun: { method: 'post', path: '/v1/runs/{id}/rerun' },
  cancelRuns: { method: 'post', path: '/v1/runs/cancel' },
  retryRuns: { method: 'post', path: '/v1/runs/retry' },
  // ---- updates (clients; the worker's record is with the worker protocol) ----
  sendUpdate: { method: 'post', path: '/v1/runs/{id}/updates/{name}' },
  getUpdate: { method: 'get', path: '/v1/runs/{id}/updates/{name}/{updateId}' },
  // ---- operators' views (clients) ----
  stats: { method: 'get', path: '/v1/stats' },
  feed: { method: 'get', path: '/v1/feed' },
  // ---- schedules (clients) ----
  createSchedule: { method: 'post', path: '/v1/schedules' },
  listSchedules: { method: 'get', path: '/v1/schedules' },
  getSchedule: { method: 'get', path: '/v1/schedules/{id}' },
  deleteSchedule: { method: 'delete', path: '/v1/schedules/{id}' },
  pauseSchedule: { method: 'post', path: '/v1/schedules/{id}/pause' },
  resumeSchedule: { method: 'post', path: '/v1/schedules/{id}/resume' },
  triggerSchedule: { method: 'post', path: '/v1/schedules/{id}/trigger' },
  // ---- dead letters (clients) ----
  listDeadLetters: { method: 'get', path: '/v1/dead-letters' },
  redriveDeadLetter: { method: 'post', path: '/v1/dead-letters/{id}/redrive' },
  deleteDeadLetter: { method: 'delete', path: '/v1/dead-letters/{id}' },
  // ---- workers (clients) ----
  listWorkers: { method: 'get', path: '/v1/workers' },
  // ---- workflow versions (clients) ----
  listWorkflows: { method: 'get', path: '/v1/workflows' },
  pauseWorkflow: { method: 'post', path: '/v1/workflows/{name}/{version}/pause' },
  resumeWorkflow: { method: 'post', path: '/v1/workflows/{name}/{version}/resume' },
  setWorkflowLimits: { method: 'put', path: '/v1/workflows/{name}/{version}/limits' },
  clearWorkflowLimits: { method: 'delete', path: '/v1/workflows/{name}/{version}/limits' },
  // ---- the worker protocol (workers) ----
  registerWorker: { method: 'put', path: '/v1/worker/workers/{workerId}' },
  claimRuns: { method: 'post', path: '/v1/worker/claims' },
  offerRuns: { method: 'post', path: '/v1/worker/offers' },
  withdrawOffer: { method: 'delete', path: '/v1/worker/offers/{offerId}' },
  takeRuns: { method: 'post', path: '/v1/worker/takes' },
  heartbeat: { method: 'post', path: '/v1/worker/heartbeats' },
  recordTask: { method: 'post', path: '/v1/worker/runs/{id}/tasks' },
  report: { method: 'post', path: '/v1/worker/reports' },
  completeRun: { method: 'post', path: '/v1/worker/runs/{id}/complete' },
  failRun: { method: 'post', path: '/v1/worker/runs/{id}/fail' },
  suspendRun: { method: 'post', path: '/v1/worker/runs/{id}/suspend' },
  startChild: { method: 'post', path: '/v1/worker/runs/{id}/children' },
  waitGroup: { method: 'post', path: '/v1/worker/runs/{id}/groups' },
  releaseRun: { method: 'post', path: '/v1/worker/runs/{id}/release' },
  recordUpdates: { method: 'post', path: '/v1/worker/runs/{id}/updates' },
  reportDeadLetter: { method: 'post', path: '/v1/worker/dead-letters' },
  createCompletionToken: { method: 'post', path: '/v1/worker/runs/{id}/completion-tokens' },
  // ---- no token (public) ----
  live: { method: 'get', path: '/health/live' },
  ready: { method: 'get', path: '/health/ready' },
  metrics: { method: 'get', path: '/metrics' },
  dashboardConfig: { method: 'get', path: '/ui/config.json' },
  // ---- completion tokens (no token but the completion token itself) ----
  completeExternal: { method: 'post', path: '/v1/completions/{token}' },
} as const satisfies Record<string, ApiRoute>;

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** What a call of a route fills in: its path parameters, its query (a list is sent once per value) and its body. */
export interface RouteCall {
  params?: object;
  query?: object;
  body?: unknown;
}

/** The method, path (parameters filled in, query appended) and body of a call of `route`. */
export function routeRequest(route: ApiRoute, { params, query, body }: RouteCall): { method: HttpMethod; path: string; body: unknown } {
  const values = (params ?? {}) as Record<string, unknown>;
  const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(values[name])));
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    // A repeatable parameter (`tag`) is sent once per value.
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) search.append(key, String(item));
  }
  return { method: route.method.toUpperCase() as HttpMethod, path: search.size > 0 ? `${path}?${search}` : path, body };
}

import { CompleteRequest, CompletionAccepted, CompletionTokenPath } from './completions.contracts';
import { DashboardConfig } from './dashboard-config.contracts';
import { ROUTES } from './routes';
import { endpoint, json, type Endpoint } from './endpoint';
import { Type } from '@sinclair/typebox';

/** Each health indicator's state (`up`, `degraded`, `down`), with what it found. */
const Indicators = Type.Record(Type.String(), Type.Object({ status: Type.Union([Type.Literal('up'), Type.Literal('degraded'), Type.Literal('down')]) }));

/** A terminus report: `status` overall, and each indicator's state under `info` (up), `error` (not up) and `details` (all). */
const HealthReport = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('error'), Type.Literal('shutting_down')]),
    info: Type.Optional(Indicators),
    error: Type.Optional(Indicators),
    details: Indicators,
  },
  { title: 'HealthReport' },
);

/** The routes that take no token: health, metrics, the dashboard's settings, and completions (the completion token is the credential). */
export const PUBLIC_ENDPOINTS = {
  live: endpoint({
    ...ROUTES.live,
    audience: 'public',
    tag: 'operations',
    summary: 'Liveness: the process serves HTTP',
    status: 200,
    responses: { 200: json('Up', HealthReport) },
  }),
  ready: endpoint({
    ...ROUTES.ready,
    audience: 'public',
    tag: 'operations',
    summary: 'Readiness: PostgreSQL, the LISTEN session, and with a publisher Redis and the outbox',
    status: 200,
    responses: { 200: json('Up, or `degraded` when the outbox falls behind or dead letters pile up', HealthReport), 503: json('Down', HealthReport) },
  }),
  metrics: endpoint({
    ...ROUTES.metrics,
    audience: 'public',
    tag: 'operations',
    summary: 'Prometheus metrics',
    status: 200,
    responses: { 200: { description: 'Prometheus text format', schema: Type.String(), contentType: 'text/plain' } },
  }),
  dashboardConfig: endpoint({
    ...ROUTES.dashboardConfig,
    audience: 'public',
    tag: 'operations',
    summary: "The web dashboard's settings (its pages are served under /ui without a token; the API calls they make take one)",
    status: 200,
    responses: { 200: json('Whether API calls need the client token', DashboardConfig) },
  }),
  completeExternal: endpoint({
    ...ROUTES.completeExternal,
    audience: 'public',
    tag: 'completions',
    summary:
      'Complete (`data`) or fail (`error`) the step a workflow made this completion token for (ctx.awaitExternal). ' +
      'Takes no API token: the unguessable completion token is the credential, good for one completion',
    params: CompletionTokenPath,
    body: CompleteRequest,
    bodyOptional: true,
    status: 202,
    responses: { 202: json('Accepted: delivered to the waiting run, or kept until it waits', CompletionAccepted) },
    errors: {
      404: 'completion_token_not_found: no such token (or its run was deleted)',
      409: 'completion_token_used: the token was completed or failed already',
      410: 'completion_token_expired: the token timed out (its wait resolved as timed out), or its run ended',
    },
  }),
} satisfies Record<string, Endpoint>;

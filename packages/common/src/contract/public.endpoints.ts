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

/** The routes that take no token: health, metrics, the dashboard's settings. */
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
} satisfies Record<string, Endpoint>;

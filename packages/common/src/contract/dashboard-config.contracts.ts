import { type Static, Type } from '@sinclair/typebox';
import { Closed } from './fields';

/**
 * What the dashboard (served at /ui) needs to know before its first API call, read without a token: whether
 * the API wants the client token, so it asks for one only when it will be needed, and where a run's trace can be seen.
 */
export const DashboardConfig = Closed(
  {
    authRequired: Type.Boolean({ description: 'true: API calls need the client token (false only with AUTH_DISABLED=true)' }),
    traceUrlTemplate: Type.Union([Type.String(), Type.Null()], {
      description: "a trace viewer's address with {traceId} where a run's trace id goes (TRACE_URL_TEMPLATE); null: none configured",
    }),
  },
  { title: 'DashboardConfig' },
);
export type DashboardConfig = Static<typeof DashboardConfig>;

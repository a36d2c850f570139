import { CLIENT_ENDPOINTS } from './client.endpoints';
import type { Endpoint } from './endpoint';
import { PUBLIC_ENDPOINTS } from './public.endpoints';
import { WORKER_ENDPOINTS } from './worker.endpoints';

export type { Endpoint, EndpointInput } from './endpoint';

/**
 * Every route of the coordinator's HTTP API, once, by whose token it takes: the coordinator serves each from its
 * entry (path, method, status, audience, and the schemas it validates its input with), and the API description at
 * /docs-json is built from the same entries (see openApiDocument). Each entry takes its method and path from ROUTES
 * under its own name, and no two of the groups name the same entry (endpoints.spec.ts).
 */
export const API = { ...CLIENT_ENDPOINTS, ...WORKER_ENDPOINTS, ...PUBLIC_ENDPOINTS } satisfies Record<string, Endpoint>;

import type { Static, StaticEncode, TSchema } from '@sinclair/typebox';
import type { Endpoint } from './endpoints';
import { type HttpMethod, type RouteCall, routeRequest } from './routes';

type Encoded<S> = S extends TSchema ? StaticEncode<S> : never;

/**
 * What a call of `E` sends, typed from the endpoint's own schemas as the wire carries them (timestamps
 * as ISO text, say): renaming a field or a path parameter in the contract breaks the callers' build.
 */
export type EndpointCall<E extends Endpoint> = (E['params'] extends TSchema ? { params: Encoded<E['params']> } : { params?: undefined }) &
  (E['query'] extends TSchema ? { query?: Partial<Encoded<E['query']>> } : { query?: undefined }) &
  (E['body'] extends TSchema ? (E extends { bodyOptional: true } ? { body?: Encoded<E['body']> } : { body: Encoded<E['body']> }) : { body?: undefined });

/** What a success of `E` answers (its schema's type; `undefined` for an empty answer). */
export type EndpointResult<E extends Endpoint> = E['responses'][E['status']] extends { schema: infer S extends TSchema } ? Static<S> : undefined;

/** The method, path (parameters filled in, query appended) and body of a call of `endpoint`. */
export function endpointRequest<E extends Endpoint>(endpoint: E, call: EndpointCall<E>): { method: HttpMethod; path: string; body: unknown } {
  return routeRequest(endpoint, call as RouteCall);
}

import { type StaticDecode, type TSchema } from '@sinclair/typebox';
import type { ApiRoute } from './routes';

/** A route of the coordinator's HTTP API (see API): how the coordinator serves it and the API description tells it. */
export interface Endpoint extends ApiRoute {
  /** Whose bearer token it takes: CLIENT_TOKEN, WORKER_TOKEN, or none. */
  audience: 'client' | 'worker' | 'public';
  tag: string;
  summary: string;
  params?: TSchema;
  query?: TSchema;
  body?: TSchema;
  /** A body that may be left out (read as `{}`). */
  bodyOptional?: boolean;
  /** The status of a success, unless the handler sets another of `responses`. */
  status: number;
  responses: Record<number, { description: string; schema?: TSchema; contentType?: string }>;
  /** Refusals of this route beyond the ones every route has (400 for bad input, 401, 503). */
  errors?: Partial<Record<404 | 409 | 410, string>>;
}

/** What a route's handler gets: its path parameters, query and body, validated and decoded. */
export type EndpointInput<E extends Endpoint> = {
  params: E['params'] extends TSchema ? StaticDecode<E['params']> : undefined;
  query: E['query'] extends TSchema ? StaticDecode<E['query']> : undefined;
  body: E['body'] extends TSchema ? StaticDecode<E['body']> : undefined;
};

/** Declares an entry of API, keeping its literal types (the handler's input is typed from its schemas). */
export const endpoint = <const E extends Endpoint>(entry: E): E => entry;
export const json = <S extends TSchema>(description: string, schema: S) => ({ description, schema });

export const RUN_NOT_FOUND = 'run_not_found';
export const revisioned = {
  404: RUN_NOT_FOUND,
  409: 'revision_conflict: the run is no longer at `expectedRevision` in a running state (nothing changed)',
} as const;

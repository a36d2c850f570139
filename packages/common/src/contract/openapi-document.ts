import { Kind, type TObject, type TSchema } from '@sinclair/typebox';
import { API, type Endpoint } from './endpoints';
import { ErrorBody } from './error-body';

/** An OpenAPI 3.1 document (its schemas are JSON Schema 2020-12, which the contract's schemas are). */
export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  tags: { name: string }[];
  paths: Record<string, Record<string, object>>;
  components: { schemas: Record<string, object>; securitySchemes: Record<string, object> };
}

/**
 * The API description served at /docs-json, built from the same endpoints and schemas the coordinator
 * validates with. Schemas with a `title` are described once, under components.schemas.
 */
export function openApiDocument(endpoints: Record<string, Endpoint> = API): OpenApiDocument {
  const named = new Map<string, { schema: TSchema; json: object }>();

  /** The schema as JSON (TypeBox's symbols left out), titled ones as references. */
  const toJson = (schema: TSchema, root = false): object => {
    const title = schema.title as string | undefined;
    if (title !== undefined && !root) {
      const known = named.get(title);
      if (known && known.schema !== schema && JSON.stringify(known.json) !== JSON.stringify(toJson(schema, true))) {
        throw new Error(`two different schemas are titled ${title}`);
      }
      if (!known) {
        const entry = { schema, json: {} };
        named.set(title, entry);
        entry.json = toJson(schema, true);
      }
      return { $ref: `#/components/schemas/${title}` };
    }
    return convert(schema) as object;
  };
  const convert = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(convertItem);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, convertItem(item)]));
  };
  const convertItem = (item: unknown): unknown => (item !== null && typeof item === 'object' && Kind in item ? toJson(item as TSchema) : convert(item));

  const error = (description: string) => ({ description, content: { 'application/json': { schema: toJson(ErrorBody) } } });
  const paths: OpenApiDocument['paths'] = {};
  for (const [operationId, endpoint] of Object.entries(endpoints)) {
    const parameters = [...parametersOf(endpoint.params, 'path', toJson), ...parametersOf(endpoint.query, 'query', toJson)];
    const responses: Record<string, object> = {};
    for (const [status, response] of Object.entries(endpoint.responses)) {
      responses[status] = response.schema
        ? { description: response.description, content: { [response.contentType ?? 'application/json']: { schema: toJson(response.schema) } } }
        : { description: response.description };
    }
    const readsInput = parameters.length > 0 || endpoint.body !== undefined;
    if (readsInput)
      responses[400] = error('Invalid request (`reason` names the field: `invalid_<field>`, `unknown_field`, `json_too_deep`, …): nothing was changed');
    if (endpoint.audience !== 'public') responses[401] = error('Missing or wrong bearer token: nothing was read or changed');
    for (const [status, reasons] of Object.entries(endpoint.errors ?? {})) responses[status] = error(reasons);
    if (endpoint.body !== undefined) {
      responses[413] = error('payload_too_large: the body (inflated, if sent in gzip, deflate or br) exceeds BODY_LIMIT_BYTES');
      responses[415] = error(
        'unsupported_media_type: a body that is not JSON; unsupported_content_encoding: a content coding other than gzip, deflate or br (nothing was used)',
      );
    }
    if (endpoint.audience !== 'public') responses[503] = error('database_unavailable: PostgreSQL could not be reached; retry later');
    paths[endpoint.path] ??= {};
    paths[endpoint.path][endpoint.method] = {
      operationId,
      tags: [endpoint.tag],
      summary: endpoint.summary,
      security: endpoint.audience === 'public' ? [] : [{ [endpoint.audience]: [] }],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(endpoint.body ? { requestBody: { required: !endpoint.bodyOptional, content: { 'application/json': { schema: toJson(endpoint.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'nest-durable-workflows coordinator',
      version: '1',
      description:
        'Client API (bearer CLIENT_TOKEN) to start, inspect, wait for and control runs; worker protocol (bearer WORKER_TOKEN). ' +
        'Bodies are JSON, nested at most 128 levels deep. Every error is {statusCode, error, reason, message}; a field refused ' +
        'gives the `x-reason` its schema names.',
    },
    tags: [...new Set(Object.values(endpoints).map((endpoint) => endpoint.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: Object.fromEntries([...named].sort(([a], [b]) => a.localeCompare(b)).map(([title, { json }]) => [title, json])),
      securitySchemes: { client: { type: 'http', scheme: 'bearer' }, worker: { type: 'http', scheme: 'bearer' } },
    },
  };
}

/** The OpenAPI parameters of a path or query schema: one per property. */
function parametersOf(schema: TSchema | undefined, location: 'path' | 'query', toJson: (schema: TSchema) => object): object[] {
  if (!schema) return [];
  const object = schema as TObject;
  return Object.entries(object.properties).map(([name, property]) => ({
    name,
    in: location,
    required: location === 'path' || (object.required ?? []).includes(name),
    ...(property.description ? { description: property.description } : {}),
    schema: toJson(property),
  }));
}
